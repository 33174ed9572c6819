"""The digest an Ollama server reports for a model tag: a re-pulled tag is a new model, so a new identity."""

from __future__ import annotations

from typing import Any

from nomad_eval.backends.retry import malformed, within
from nomad_eval.base.errors import NomadError
from nomad_eval.base.secrets import redact_text


def ollama_digest(client: Any, name: str, where: str, timeout: float) -> str:
    """The digest of `name` from the server's model list (`/api/tags`), asked within `timeout` seconds.

    `/api/show` describes a model but carries no digest; the list does, and it changes whenever the tag is pulled
    again. Without it a cached vector or answer could not be told from one made by the model now behind the tag,
    so an unreachable server or an unknown model is an error here, not a silent miss.
    """
    import httpx

    try:
        models = within(timeout, client.list).models
    except (httpx.TimeoutException, TimeoutError):
        raise NomadError(f"{where} did not list its models within {timeout} s") from None
    except (httpx.HTTPError, ConnectionError) as exc:
        raise NomadError(f"{where} is unreachable while reading the model's digest: {redact_text(str(exc))}. "
                         "Start the server or set base_url.") from None
    except (ValueError, TypeError, AttributeError, KeyError) as exc:  # not JSON, or not a model list
        raise NomadError(f"{where} answered the model list (/api/tags) with {malformed(exc)}") from None
    for m in models:
        if m.model in (name, f"{name}:latest") and m.digest:
            return str(m.digest)
    names = ", ".join(str(m.model) for m in models) or "(none)"
    raise NomadError(f"{where}: the server lists no model {name!r} with a digest; it has: {names}. "
                     "Pull it, or set the model name.")
