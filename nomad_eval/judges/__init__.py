"""LLM judges: rubric-driven, temperature 0, structured output, reported apart from deterministic scores."""
