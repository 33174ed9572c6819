"""Questions known to be flaky, with an owner and an expiry: `<goldens folder>/quarantine.yaml`, committed.

A quarantined question is run and reported but not gated, so one known-flaky question cannot fail every pull
request while its owner fixes it; the expiry keeps the quarantine from becoming the place questions go to be
forgotten: an expired entry fails `action=check` by name, and stops protecting its question in compare.

    - id: mini-03          # a golden id
      mode: e2e            # optional: one generation mode; every mode when left out
      reason: the compost answer flips between two phrasings of the temperature
      owner: "@alice"
      expires: 2027-01-31
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nomad_eval.base.errors import Defect, InvalidInput

FILE = "quarantine.yaml"
FIELDS = ("id", "reason", "owner", "expires")


@dataclass(frozen=True)
class Entry:
    id: str
    mode: str | None
    reason: str
    owner: str
    expires: dt.date
    line: int

    def covers(self, key: str) -> bool:
        """Whether this entry quarantines the question `key` ("<id>" or "<mode>:<id>")."""
        mode, _, qid = key.rpartition(":")
        return qid == self.id and (self.mode is None or self.mode == mode)

    def text(self) -> str:
        return (f"{self.id}{f' ({self.mode})' if self.mode else ''}: {self.reason} (owner {self.owner}, "
                f"expires {self.expires.isoformat()})")


def _date(value: Any) -> dt.date | None:
    if isinstance(value, dt.date):
        return value
    try:
        return dt.date.fromisoformat(str(value))
    except ValueError:
        return None


def _entry(item: Any, line: int, where: str, defects: list[Defect]) -> Entry | None:
    if not isinstance(item, dict):
        defects.append(Defect(where, line, f"an entry is a mapping with {', '.join(FIELDS)}; got {item!r}"))
        return None
    missing = [f for f in FIELDS if item.get(f) in (None, "")]
    expires = _date(item.get("expires"))
    if missing:
        defects.append(Defect(where, line, f"entry {item.get('id')!r} lacks {', '.join(missing)}; every "
                              "quarantined question says why, who fixes it and until when", item.get("id")))
    elif expires is None:
        defects.append(Defect(where, line, f"entry {item['id']!r}: expires {item['expires']!r} is not a date "
                              "(YYYY-MM-DD)", str(item["id"])))
    if missing or expires is None:
        return None
    mode = item.get("mode")
    return Entry(str(item["id"]), None if mode is None else str(mode), str(item["reason"]), str(item["owner"]),
                 expires, line)


def load_quarantine(goldens_dir: Path) -> list[Entry]:
    """The entries of `<goldens_dir>/quarantine.yaml` (none without the file); InvalidInput (exit 2) naming file,
    line and value for an entry without reason, owner or a date."""
    path = goldens_dir / FILE
    if not path.is_file():
        return []
    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise InvalidInput([Defect(str(path), None, f"not YAML: {exc}")]) from None
    if data is None:
        return []
    if not isinstance(data, list) or root is None or not isinstance(root, yaml.SequenceNode):
        raise InvalidInput([Defect(str(path), 1, "a quarantine file is a list of entries (- id: ...)")])
    defects: list[Defect] = []
    entries = [_entry(item, node.start_mark.line + 1, str(path), defects) for item, node in zip(data, root.value,
                                                                                               strict=True)]
    if defects:
        raise InvalidInput(defects)
    return [e for e in entries if e is not None]


def expired(entries: list[Entry], today: dt.date) -> list[Entry]:
    return [e for e in entries if e.expires < today]


def expiry_defects(goldens_dir: Path, entries: list[Entry], known_ids: set[str], today: dt.date) -> list[Defect]:
    """action=check's findings: expired entries and entries for goldens no suite holds, each by name."""
    where = str(goldens_dir / FILE)
    out = [Defect(where, e.line, f"quarantine of {e.text()} expired; fix the question and remove the entry, or "
                  "extend it with a reason", e.id) for e in expired(entries, today)]
    out += [Defect(where, e.line, f"quarantine names {e.id!r}, which no suite holds", e.id)
            for e in entries if known_ids and e.id not in known_ids]
    return out
