from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError

from nomad_eval.base.errors import Defect, InvalidInput, first_error


class Rubric(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    version: int
    scale: list[int]
    instructions: str

    @property
    def key(self) -> str:
        return f"{self.name}-v{self.version}"

    def verdict_schema(self) -> dict[str, object]:
        return {"type": "object", "properties": {"verdict": {"type": "integer", "enum": self.scale},
                                                 "reason": {"type": "string"}},
                "required": ["verdict", "reason"]}


def load_rubric(folder: Path, name: str) -> Rubric:
    path = folder / f"{name}.yaml"
    if not path.is_file():
        raise InvalidInput([Defect(str(path), None, f"no rubric named {name!r}")])
    try:
        return Rubric.model_validate(yaml.safe_load(path.read_text(encoding="utf-8")))
    except ValidationError as exc:
        raise InvalidInput([Defect(str(path), None, first_error(exc))]) from None
