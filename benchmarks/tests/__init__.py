"""The benchmarks' own tests: their options, their arithmetic and short runs of each."""
