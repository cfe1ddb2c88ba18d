"""Benchmark harness: the gateway against `vllm serve`, side by side (`make bench`).

Never imported by the app or the tests; see bench/README.md.
"""
