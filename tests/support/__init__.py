"""What the tests and the benchmarks share: a dashboard server on a free port, the labels that
say a tab is ready, browser and process helpers, hypothesis strategies, oracles and the Spark
cases (outside the installed package)."""
