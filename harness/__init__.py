"""What the tests and the benchmarks both run against, outside the package: a dashboard server
on a free loopback port, ended with every process it started, the label that says each tab is
ready, and the page's data signature (:mod:`harness.server`).  Neither ``tests`` nor
``benchmarks`` is imported here, and the wheel holds none of it."""
