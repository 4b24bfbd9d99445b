"""pytest in docs/: the pages' ``>>>`` examples are doctested (``--doctest-glob``); the
notebooks, linked here for Sphinx, run once under nbmake from notebooks/, and conf.py is
Sphinx's configuration, not a module to import."""

collect_ignore = ["notebooks", "conf.py"]
