"""What the tests and the benchmarks both run against, outside the package: a dashboard server
on a free loopback port, ended with every process it started, the label that says each tab is
ready, and the page's data signature (:mod:`harness.server`); the live join's input and oracle,
a newcomer's CSV and the in-process PTJoin's pairs (:mod:`harness.live_cases`).  Neither
``tests`` nor ``benchmarks`` is imported here, and the wheel holds none of it."""
