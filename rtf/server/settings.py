"""Where ``rtf serve`` takes its settings: the command line, the environment
(``RTF_SERVE_*``), a TOML file (``--config FILE``), and the defaults -- the first
that says a setting wins, as services deployed under systemd
(``Environment=``, ``EnvironmentFile=``) or Kubernetes (``env:``, a ConfigMap
mounted as a file) are configured. pydantic-settings reads and checks them.

Every option of ``rtf serve`` is a setting of the same name: ``--max-body`` is
``RTF_SERVE_MAX_BODY`` and ``max_body`` in the file (which ``RTF_SERVE_CONFIG`` may
name instead of ``--config``)::

    >>> settings = serve_settings({"data": "broker", "port": 9000})
    >>> settings.port, str(settings.data), settings.host, settings.log_level
    (9000, 'broker', '127.0.0.1', 'warning')

Anything not understood is refused in one line naming the setting and where it
came from: a value of the wrong kind, a key of the file or an ``RTF_SERVE_*``
variable that is no setting (a typo would otherwise be ignored silently: the
same rule as the HTTP API's unknown fields), a file that is missing or not TOML.
"""

from __future__ import annotations

import difflib
import os
import tomllib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator
from pydantic_settings import (BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict,
                               TomlConfigSettingsSource)

from rtf.engine import ALGORITHMS, DEFAULT_ALGORITHM
from rtf.errors import RtfError
from rtf.server.config import (DEFAULT_PORT, MAX_AGE_S, MAX_BODY, MAX_EVENTS, SNAPSHOT_EVERY,
                               STREAM_QUEUE)

ENV_PREFIX = "RTF_SERVE_"

LogLevel = Literal["critical", "error", "warning", "info", "debug"]


class SettingsError(RtfError):
    """A setting of ``rtf serve`` that cannot be used (one line)."""


class ServeSettings(BaseSettings):
    """The settings of ``rtf serve``, one per command-line option (``--max-body`` is
    ``max_body``), with the option's default and checks."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="forbid")

    data: Path = Field(description="the broker's data folder")
    algorithm: str = DEFAULT_ALGORITHM
    taxonomy: Path | None = None
    host: str = "127.0.0.1"
    port: int = Field(DEFAULT_PORT, ge=0, le=65535)
    tokens: Path | None = None
    max_body: int = Field(MAX_BODY, ge=1)
    stream_queue: int = Field(STREAM_QUEUE, ge=1)
    outbox_max_events: int = Field(MAX_EVENTS, ge=1)
    outbox_max_age: float = Field(float(MAX_AGE_S), gt=0)
    snapshot_every: int = Field(SNAPSHOT_EVERY, ge=1)
    import_index: Path | None = None
    #: Text analysis options (`rtf.io.analysis_file`): a JSON object, a JSON or TOML file's
    #: name, or (in the TOML file) a table; the engine's analysis, checked at start.
    text_analysis: Any = None
    log_level: LogLevel = "warning"

    @field_validator("algorithm")
    @classmethod
    def _known_algorithm(cls, value: str) -> str:
        if value not in ALGORITHMS:
            raise ValueError(f"one of {', '.join(ALGORITHMS)}")
        return value

    @field_validator("text_analysis", mode="before")
    @classmethod
    def _text_analysis(cls, value: Any) -> Any:
        from rtf.io.analysis_file import read_text_analysis
        from rtf.query.analysis import TextAnalysis, TextAnalysisError, analysis_from_dict

        if value is None or isinstance(value, TextAnalysis) or type(value).__name__ == "FieldAnalysis":
            return value
        try:
            if isinstance(value, str):
                return read_text_analysis(value)
            if isinstance(value, dict):
                analysis = analysis_from_dict(value)
                return None if analysis.is_default else analysis
        except TextAnalysisError as e:
            raise ValueError(str(e)) from None
        raise ValueError("text analysis options: a JSON object, a file's name or a TOML table")

    @field_validator("log_level", mode="before")
    @classmethod
    def _lower_case(cls, value: Any) -> Any:
        return value.lower() if isinstance(value, str) else value

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        """The command line (given as init arguments), the environment, the file."""
        sources = [init_settings, env_settings]
        if settings_cls.model_config.get("toml_file"):
            sources.append(TomlConfigSettingsSource(settings_cls))
        return tuple(sources)


NAMES = tuple(ServeSettings.model_fields)


def serve_settings(command_line: Mapping[str, Any],
                   config: str | os.PathLike[str] | None = None) -> ServeSettings:
    """The settings of ``rtf serve``: `command_line` (the options given, by setting
    name), then the environment (``RTF_SERVE_*``), then the TOML file `config`, then
    the defaults; without `config`, the file ``RTF_SERVE_CONFIG`` names, if any.
    `SettingsError` for anything it cannot use."""
    _refuse_unknown_variables(os.environ)
    if config is None:
        config = _environ_config(os.environ)
    cls: type[ServeSettings] = ServeSettings
    if config is not None:
        _check_file(Path(config))
        cls = type("ServeSettings", (ServeSettings,),
                   {"model_config": {**ServeSettings.model_config, "toml_file": Path(config)}})
    try:
        return cls(**{name: value for name, value in command_line.items() if name in NAMES})
    except ValidationError as e:
        raise SettingsError(_first_problem(e, config)) from None


def sources(name: str, config: str | os.PathLike[str] | None) -> str:
    """Where setting `name` may come from, as a message names them."""
    places = [f"--{name.replace('_', '-')}", ENV_PREFIX + name.upper()]
    if config is not None:
        places.append(f"{name} in {config}")
    return ", ".join(places[:-1]) + " or " + places[-1]


def _first_problem(error: ValidationError, config: str | os.PathLike[str] | None) -> str:
    problem = error.errors()[0]
    name = str(problem["loc"][0]) if problem["loc"] else "?"
    if problem["type"] == "missing":
        return f"rtf serve needs a setting {name!r}: {sources(name, config)}"
    if problem["type"] == "extra_forbidden":
        return f"{config}: {_unknown(name)}"
    message = problem["msg"].removeprefix("Value error, ")
    return f"setting {name!r} ({sources(name, config)}): {message}, not {problem['input']!r}"


def _unknown(name: str) -> str:
    near = difflib.get_close_matches(name.lower().replace("-", "_"), NAMES, n=1)
    hint = f"did you mean {near[0]!r}? " if near else ""
    return (f"{name!r} is not a setting of rtf serve ({hint}the settings are the options' names "
            f"with _: {', '.join(NAMES)})")


#: The variable naming the config file (``--config FILE`` wins over it).
CONFIG_VARIABLE = ENV_PREFIX + "CONFIG"


def _environ_config(environ: Mapping[str, str]) -> str | None:
    return next((value for key, value in environ.items() if key.upper() == CONFIG_VARIABLE), None)


def _refuse_unknown_variables(environ: Mapping[str, str]) -> None:
    for key in sorted(environ):
        if (key.upper().startswith(ENV_PREFIX) and key.upper() != CONFIG_VARIABLE
                and key[len(ENV_PREFIX):].lower() not in NAMES):
            raise SettingsError(f"environment variable {key}: "
                                f"{_unknown(key[len(ENV_PREFIX):].lower())}")


def _check_file(path: Path) -> None:
    """A config file that cannot be read, or is not TOML, said in one line (pydantic-settings
    would take a missing file for an empty one)."""
    try:
        with path.open("rb") as f:
            tomllib.load(f)
    except OSError as e:
        raise SettingsError(f"--config {path}: cannot read it: {e.strerror or e}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise SettingsError(f"--config {path}: not TOML: {e}") from None
