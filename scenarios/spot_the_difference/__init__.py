"""spot_the_difference: two viewers of two scenes find what differs; teams race for brevity."""
