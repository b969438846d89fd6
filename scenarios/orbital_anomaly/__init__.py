"""orbital_anomaly: three views of a failing spacecraft, fused over one metered link."""
