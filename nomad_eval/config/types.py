"""The value types of config keys. Strict: pydantic's lax mode reads `limit=true` as 1 and `threshold="0.4"` as a
number; a config value of the wrong type is a typo to name, not to guess at. A Float takes an int (0 is a fine
threshold) but never a bool, and never NaN (which compares false with every bound, so no range check would catch it)
or infinity."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict

Int = Annotated[int, Strict()]
Float = Annotated[float, Strict(), Field(allow_inf_nan=False)]
Bool = Annotated[bool, Strict()]
Count = Annotated[int, Strict(), Field(ge=1)]
Whole = Annotated[int, Strict(), Field(ge=0)]
Seconds = Annotated[float, Strict(), Field(gt=0, allow_inf_nan=False)]
Share = Annotated[float, Strict(), Field(ge=0.0, le=1.0, allow_inf_nan=False)]
NonNegative = Annotated[float, Strict(), Field(ge=0.0, allow_inf_nan=False)]
Name = Annotated[str, Strict(), Field(min_length=1)]


def _text(value: Any) -> Any:
    # Hydra reads `promote.variant=2` or `compare.reference=3` as a number; a name or a path is text.
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


Text = Annotated[str, BeforeValidator(_text), Strict()]


class Keys(BaseModel):
    """Types and ranges only: every value, and every default, is the YAML's. A field is required (the composed
    config has the key) and takes None only where a shipped config's value is null."""

    model_config = ConfigDict(extra="ignore", frozen=True)
