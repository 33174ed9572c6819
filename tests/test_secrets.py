"""No file a run or a promote writes holds a secret: environment values and credentials are redacted."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from omegaconf import DictConfig, OmegaConf

from nomad_eval.base.secrets import REDACTED, literal_secrets, redact, redact_override, redact_text, redact_tree
from nomad_eval.cli.entry import run_tier
from nomad_eval.cli.resolvers import job_dirname
from tests.conftest import MINI, run_cli
from tests.servers import openai_compat

KEY = "sk-test-PLANTED-7f3a9c01e4"


def test_redact_keeps_interpolations_and_hides_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOMAD_TEST_KEY", KEY)
    cfg = OmegaConf.create({
        "model": {"api_key": "${oc.env:NOMAD_TEST_KEY}", "base_url": "http://h/${oc.env:NOMAD_TEST_KEY}",
                  "max_tokens": 64, "name": "m"},
        "judge": {"model": {"api_key": "${model.api_key}", "token": "literal-secret", "copy": "${model.api_key}"}},
        "store": {"api_key": None, "password": ""},
        "paths": ["${oc.env:NOMAD_TEST_KEY}", "plain"],
    })
    unresolved = OmegaConf.to_container(cfg, resolve=False)
    out = redact(unresolved, OmegaConf.to_container(cfg, resolve=True))
    assert out == {
        "model": {"api_key": "${oc.env:NOMAD_TEST_KEY}", "base_url": "http://h/${oc.env:NOMAD_TEST_KEY}",
                  "max_tokens": 64, "name": "m"},  # max_tokens is not a credential
        # reached through another interpolation: the value is the environment's, so the interpolation stays
        "judge": {"model": {"api_key": "${model.api_key}", "token": REDACTED, "copy": "${model.api_key}"}},
        "store": {"api_key": None, "password": ""},  # nothing set, nothing to hide
        "paths": ["${oc.env:NOMAD_TEST_KEY}", "plain"],
    }
    assert KEY not in str(out) and unresolved == OmegaConf.to_container(cfg, resolve=False)  # pure
    assert redact_override(f"model.api_key={KEY}") == f"model.api_key={REDACTED}"
    assert redact_override("+store.api_key=${oc.env:K}") == "+store.api_key=${oc.env:K}"
    assert redact_override("pipeline.max_tokens=5") == "pipeline.max_tokens=5"


def _files_holding(root: Path, needle: str) -> list[Path]:
    files = [p for p in root.rglob("*") if p.is_file()]
    assert files, root
    return [p for p in files if needle.encode() in p.read_bytes()]


@pytest.mark.slow
def test_no_written_file_holds_an_environment_key(tmp_path: Path, data_dir: Path,
                                                  make_cfg: Callable[..., DictConfig],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A real run through the CLI (Hydra writes .hydra/ and its log too), then a promote of it."""
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    run = tmp_path / "run"
    env = "${oc.env:OPENAI_API_KEY}"
    r = run_cli(*MINI, f"paths.data_dir={data_dir}", f"paths.run_dir={run}", "quiet=true", "model=openai",
                f"model.api_key={env}", "model@judge.model=openai", f"judge.model.api_key={env}",
                f"model.base_url=http://127.0.0.1:9/v1/{env}")  # in a key not named like a credential too
    assert r.returncode == 0, r.stderr
    assert (run / ".hydra" / "config.yaml").exists() and (run / "report.html").exists()
    assert f'"api_key": "{env}"' in (run / "report.json").read_text()  # where the value came from is kept
    baselines = tmp_path / "baselines"
    assert run_tier(make_cfg("tier=promote", f"promote.run={run}", f"paths.baselines_dir={baselines}")) == 0
    assert f'"api_key": "{env}"' in next(baselines.rglob("retrieval.json")).read_text()
    assert KEY not in r.stdout + r.stderr
    assert _files_holding(run, KEY) == [] and _files_holding(baselines, KEY) == []


def test_redact_text_hides_url_passwords_typed_keys_and_known_values() -> None:
    cases = {
        "http://user:pw-X1@127.0.0.1:8080/v1": "http://<redacted>@127.0.0.1:8080/v1",
        "https://tok@h/x?a=b@c": "https://<redacted>@h/x?a=b@c",  # an @ after the path is not user information
        "http://u:p@ss@h/v1": "http://<redacted>@h/v1",  # an unencoded @ in the password
        r"model.base_url=http\://user\:pw@h\:1/v1": r"model.base_url=http\://<redacted>@h\:1/v1",  # a sweep's
        "#0 : suite=mini model.api_key=sk-1 +judge.model.password=x": "#0 : suite=mini model.api_key=<redacted> "
                                                                      "+judge.model.password=<redacted>",
        "Authorization: Bearer sk-abc": "Authorization: Bearer <redacted>",
        "model.api_key=${oc.env:K} max_tokens=5 http://h/v1 mail a@b": "model.api_key=${oc.env:K} max_tokens=5 "
                                                                       "http://h/v1 mail a@b",
    }
    for text, want in cases.items():
        assert redact_text(text) == want, text
    echoed = redact_text("invalid key sk-echoed-9 given", ["sk-echoed-9", "", None, "x"])
    assert echoed == "invalid key <redacted> given"


def test_hydra_files_folder_names_and_configs_lose_credentials() -> None:
    tree = {"model": {"base_url": "http://u:pw-X2@h/v1", "api_key": "sk-lit-X3", "name": "m"},
            "hydra": {"overrides": {"task": ["model.api_key=sk-lit-X3", "model.base_url=http://u:pw-X2@h/v1"]},
                      "job": {"override_dirname": "model.api_key-sk-lit-X3+model.name-m"}}}
    out = str(redact_tree(tree, {"sk-lit-X3"}))
    assert "X2" not in out and "X3" not in out and "model.name-m" in out
    name = job_dirname("model.api_key-sk-lit-X3+model.base_url-http://u:pw-X2@h/v1+seed-1",
                       ["model.api_key=sk-lit-X3", "model.base_url=http://u:pw-X2@h/v1", "seed=1"])
    assert "X2" not in name and "X3" not in name and name.endswith("+seed-1")
    assert redact(tree, tree)["model"] == {"base_url": "http://<redacted>@h/v1", "api_key": REDACTED, "name": "m"}
    assert sorted(literal_secrets({"model": tree["model"], "store": {"url": "http://h:6333", "api_key": None},
                                   "judge": {"token": "${oc.env:T}"}})) == ["model.api_key", "model.base_url"]


def test_a_credential_typed_out_gets_a_warning_naming_key_and_place(capsys: pytest.CaptureFixture[str]) -> None:
    from hydra import compose, initialize_config_dir

    from nomad_eval.base.paths import CONF
    from nomad_eval.cli.callbacks import RedactSecrets

    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        cfg = compose("config", overrides=["model=openai"], return_hydra_config=True)
        typed = compose("config", overrides=["model=openai", "model.api_key=sk-typed-1234"], return_hydra_config=True)
    RedactSecrets().on_run_start(cfg)
    assert capsys.readouterr().err == ""  # the shipped configs hold no credential
    # As a project's config file would set it: a value in the composed config that no override typed.
    OmegaConf.update(typed, "trace.otlp_endpoint", "http://u:pw-X4@h:4318/v1/traces")
    RedactSecrets().on_multirun_start(typed)
    err = capsys.readouterr().err
    assert "model.api_key holds a credential typed out on the command line" in err
    assert "trace.otlp_endpoint holds a credential typed out in a config file" in err
    assert "pass it through the environment" in err and "sk-typed" not in err and "X4" not in err


@pytest.mark.slow
def test_no_url_password_or_typed_key_is_written_or_printed(tmp_path: Path, data_dir: Path) -> None:
    """Issue 32 case 2, end to end through the CLI: a run (quiet), a sweep (verbose: httpx and Hydra log
    lines) and a promote; then no file under the runs, the sweep, the baselines or the data dir, and no console
    line, holds the URL's password or the key typed on the command line."""
    mark, key = "pw-MARK-51c2", "sk-literal-MARK-9d0e"
    run, sweep, baselines = tmp_path / "run", tmp_path / "sweep", tmp_path / "baselines"
    with openai_compat.serve("m", lambda body: "Descale the kettle with vinegar.") as url:
        common = [*MINI, f"paths.data_dir={data_dir}", "tier=generation", "mode=noretrieval", "repeats=1",
                  "model=openai", "model.name=m", f"model.base_url={url.replace('http://', f'http://user:{mark}@')}"]
        runs = [run_cli(*common, f"paths.run_dir={run}", "quiet=true", f"model.api_key={key}"),
                run_cli(*common, "quiet=false", "verbose=true", f"model.api_key={key},{key}-2",
                        f"hydra.sweep.dir={sweep}", "-m")]
    runs.append(run_cli("tier=promote", f"promote.run={run}", f"paths.baselines_dir={baselines}"))
    assert [r.returncode for r in runs] == [0, 0, 0], [r.stderr[-2000:] for r in runs]
    console = "".join(r.stdout + r.stderr for r in runs)
    assert "pass it through the environment" in runs[0].stderr
    assert "HTTP Request: GET http://<redacted>@127.0.0.1" in runs[1].stdout  # the log lines are there, redacted
    assert (run / ".hydra" / "hydra.yaml").is_file() and len(list(sweep.glob("*/.hydra/config.yaml"))) == 2
    assert next(baselines.rglob("generation-*.json")).is_file()
    for needle in (mark, key):
        assert needle not in console
        assert _files_holding(tmp_path, needle) == []


def test_a_key_echoed_in_a_server_error_body_is_redacted(make_cfg: Callable[..., DictConfig], tmp_path: Path) -> None:
    """A server that refuses a request and quotes the key it was sent: the error printed and recorded in
    report.json names the server and status, without the key."""
    from tests.servers.misbehaving import model_list, serve

    key = "sk-echoed-PLANTED-31e7"

    def reply(method: str, path: str) -> tuple[int, bytes]:
        if method == "GET":
            return 200, model_list("openai")
        return 401, f'{{"error": "Incorrect API key provided: {key}"}}'.encode()

    with serve(reply) as (url, _):
        cfg = make_cfg(*MINI, "tier=generation", "model=openai", "model.name=m", f"model.base_url={url}/v1",
                       f"model.api_key={key}", "mode=noretrieval", "repeats=1", "cache=false")
        with pytest.raises(SystemExit) as stop:
            run_tier(cfg)
    assert stop.value.code == 2
    error = (tmp_path / "run" / "report.json").read_text()
    assert "HTTP 401 " in error and "Incorrect API key provided: <redacted>" in error and key not in error


def test_a_hydra_file_is_rewritten_only_when_it_holds_a_credential(tmp_path: Path) -> None:
    """The quick read that leaves a clean file alone still finds a credential held as a number, and the rewrite
    keeps every other value's type."""
    from nomad_eval.cli.callbacks import _rewrite

    clean = tmp_path / "clean.yaml"
    clean.write_text("a: 1\nurl: http://host/v1\nwhen: 2024-01-01\nkey_count: null\n")
    _rewrite(clean, {"sk-known-value"})
    assert clean.read_text() == "a: 1\nurl: http://host/v1\nwhen: 2024-01-01\nkey_count: null\n"
    held = tmp_path / "held.yaml"
    held.write_text("model:\n  api_key: 12345678\n  base_url: http://u:pw-9@h/v1\n  top_k: 3\n  note: sk-known-value\n")
    _rewrite(held, {"sk-known-value"})
    text = held.read_text()
    assert "12345678" not in text and "pw-9" not in text and "sk-known-value" not in text and "top_k: 3" in text


def test_http_headers_that_carry_a_credential_are_secret_keys() -> None:
    from nomad_eval.base.secrets import is_secret_key

    assert all(is_secret_key(k) for k in ("Authorization", "app.headers.X-Api-Key", "Cookie", "Proxy-Authorization"))
    assert not any(is_secret_key(k) for k in ("max_tokens", "tokens", "app.headers.Accept", "cookies_dir"))
    tree = {"app": {"headers": {"Authorization": "Bearer abc123secretvalue", "Accept": "application/json"}}}
    assert redact_tree(tree)["app"]["headers"] == {"Authorization": REDACTED, "Accept": "application/json"}


@pytest.mark.parametrize("param", ["token", "api_key", "key", "sig", "signature", "secret", "password", "auth",
                                   "access_token", "X-Amz-Signature", "apikey"])
def test_a_credential_in_a_url_query_string_is_redacted(param: str) -> None:
    url = f"http://h:8/ask?q=kettle&{param}=tok-Q-MARK-1&page=2#top"
    assert redact_text(url) == f"http://h:8/ask?q=kettle&{param}=<redacted>&page=2#top"
    assert redact_text(f"GET http://h/v1?{param}=tok-Q-MARK-1 200") == f"GET http://h/v1?{param}=<redacted> 200"
    # A sweep's override as Hydra escapes it, and a folder name made of overrides.
    assert "MARK" not in redact_text(f"app.url=http\\://h/ask?{param}\\=tok-Q-MARK-1,http\\://h/b")
    typed = f"http://h/ask?{param}=tok-Q-MARK-1"
    assert "MARK" not in job_dirname(f"app.url-{typed}", [f"app.url={typed}"])
    assert literal_secrets({"app": {"url": url}}) == ["app.url"]


def test_query_parameters_not_named_like_credentials_are_kept() -> None:
    for url in ("http://h/ask?q=token&monkey=1&keyword=2&tokens=3", "http://h/?key_id=7&sigma=2"):
        assert redact_text(url) == url
    assert redact_text("http://h/?token=${oc.env:TOK}") == "http://h/?token=${oc.env:TOK}"  # from the environment


def test_headers_env_names_variables_and_its_use_gives_no_warning(capsys: pytest.CaptureFixture[str]) -> None:
    from hydra import compose, initialize_config_dir

    from nomad_eval.base.paths import CONF
    from nomad_eval.cli.callbacks import RedactSecrets

    assert literal_secrets({"app": {"headers_env": {"Authorization": "APP_TOKEN", "X-Api-Key": "APP_KEY"}}}) == []
    with initialize_config_dir(config_dir=str(CONF), version_base="1.3"):
        documented = compose("config", overrides=["tier=app", "app=http", "app.url=http://h/ask",
                                                  "+app.headers_env.Authorization=APP_TOKEN"], return_hydra_config=True)
        in_url = compose("config", overrides=["tier=app", "app=http", "app.url='http://h/ask?token=tok-U-MARK'"],
                         return_hydra_config=True)
    RedactSecrets().on_run_start(documented)
    assert capsys.readouterr().err == ""
    RedactSecrets().on_run_start(in_url)
    err = capsys.readouterr().err
    assert "app.url holds a credential typed out on the command line" in err and "MARK" not in err
    assert "send it in a header read from the environment" in err and "app.headers_env: {Authorization: NAME}" in err
