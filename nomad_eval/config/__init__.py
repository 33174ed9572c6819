"""The one typed run config: the composed YAML read once, at the entry (cli/), into frozen pydantic models, one per
section; every layer above reads it by attribute and every layer below takes plain values. The YAML stays the only
place defaults live: these models declare types and ranges, never a value of their own."""

from nomad_eval.config.run_config import RunConfig, build

__all__ = ["RunConfig", "build"]
