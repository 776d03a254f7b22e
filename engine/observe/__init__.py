"""Floor 3: a frame and an expectation -> an Observation, the cheapest check first."""
