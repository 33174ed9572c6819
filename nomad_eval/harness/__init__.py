"""The harness objects a run is made of: runtime (corpus, goldens, store), index, searcher, tracer, run dirs."""
