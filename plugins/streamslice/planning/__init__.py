"""Planning: the ReadPlan, the run planner, interval bounds and range splitting."""
