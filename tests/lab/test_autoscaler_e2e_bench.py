"""benchmarks/autoscaler_e2e.py's arithmetic: percentiles of its samples and quantiles of the autoscaler's own
histograms (cluster_autoscaler_function_duration_seconds), read from real Prometheus text."""
from __future__ import annotations

import math

import autoscaler_e2e as bench

METRICS = """\
# TYPE cluster_autoscaler_function_duration_seconds histogram
cluster_autoscaler_function_duration_seconds_bucket{function="scaleUp",le="0.01"} 0
cluster_autoscaler_function_duration_seconds_bucket{function="scaleUp",le="0.05"} 8
cluster_autoscaler_function_duration_seconds_bucket{function="scaleUp",le="0.1"} 10
cluster_autoscaler_function_duration_seconds_bucket{function="scaleUp",le="+Inf"} 10
cluster_autoscaler_function_duration_seconds_sum{function="scaleUp"} 0.4
cluster_autoscaler_function_duration_seconds_count{function="scaleUp"} 10
cluster_autoscaler_function_duration_seconds_bucket{function="main",le="0.01"} 0
cluster_autoscaler_function_duration_seconds_bucket{function="main",le="+Inf"} 0
"""


def test_percentile_is_nearest_rank_and_nan_when_empty() -> None:
    values = [float(v) for v in range(1, 101)]
    assert (bench.percentile(values, 50), bench.percentile(values, 99), bench.percentile(values, 100)) == (50, 99, 100)
    assert bench.percentile([3.0], 99) == 3.0
    assert math.isnan(bench.percentile([], 50))


def test_histogram_quantile_interpolates_inside_the_bucket_of_its_function() -> None:
    name = "cluster_autoscaler_function_duration_seconds"
    # rank 5 of 10 lies in (0.01, 0.05] holding 8: 0.01 + 0.04 * 5/8
    assert math.isclose(bench.histogram_quantile(METRICS, name, 'function="scaleUp"', 0.5), 0.035)
    # rank 9.9 lies in (0.05, 0.1] holding 2: 0.05 + 0.05 * 1.9/2
    assert math.isclose(bench.histogram_quantile(METRICS, name, 'function="scaleUp"', 0.99), 0.0975)
    assert math.isnan(bench.histogram_quantile(METRICS, name, 'function="main"', 0.5))
    assert math.isnan(bench.histogram_quantile(METRICS, name, 'function="absent"', 0.5))
