"""The workbench's benchmarks, load rooms and soaks: commands that print figures measured in
one run (``./dev bench NAME [--json]``), kept outside the installed package, as numpy's and
river's are."""
