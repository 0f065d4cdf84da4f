"""Where ``flexplane`` keeps what it knows between runs: profiles and credentials, in the config folder.

``$XDG_CONFIG_HOME/flexplane/`` (``~/.config/flexplane/`` without it) holds two JSON files:

- ``config.json``: the profiles, each naming the API (``url``), the identity provider (``issuer``,
  Zitadel's origin; ``project_id``, flex.plane's project there; ``client_id``, the CLI's application for
  the device login), the VDC commands act in and a CA file to trust; readable like any settings file;
- ``credentials.json``, mode 0600 in a folder of mode 0700: per profile the tokens of a login (the
  access token, its expiry, the refresh token) or a service account's key with its last token.

Both are written whole to a temporary file beside them and renamed into place, so a run that is
interrupted never leaves half a file, and the credentials are never readable by others, even for a moment.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

CONFIG_FILE = "config.json"
CREDENTIALS_FILE = "credentials.json"
DEFAULT_PROFILE = "default"


def config_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """``$XDG_CONFIG_HOME/flexplane``, else ``~/.config/flexplane`` (the XDG base directory default)."""
    base = environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "flexplane"


@dataclass
class Profile:
    """Where one profile's commands go, and as whom they sign in (``flexplane login`` fills it in)."""

    url: str | None = None
    issuer: str | None = None
    project_id: str | None = None
    client_id: str | None = None
    vdc: str | None = None
    ca_file: str | None = None

    @classmethod
    def from_json(cls, values: Mapping[str, Any]) -> Profile:
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in values.items() if key in known})

    def merged(self, **given: str | None) -> Profile:
        """This profile with the values given on the command line in place of its own (None: keep)."""
        return Profile(
            **{**asdict(self), **{key: value for key, value in given.items() if value is not None}}
        )


@dataclass
class Credential:
    """One profile's sign-in: ``kind`` ``device`` (a person's login: tokens, renewed with the refresh token)
    or ``service-account`` (a key, exchanged for tokens); ``expires_at`` in seconds since the epoch."""

    kind: str
    access_token: str | None = None
    expires_at: float = 0.0
    refresh_token: str | None = None
    token_endpoint: str | None = None
    key: dict[str, Any] | None = None
    subject: str | None = None

    @classmethod
    def from_json(cls, values: Mapping[str, Any]) -> Credential:
        known = {f.name for f in fields(cls)}
        return cls(**{key: value for key, value in values.items() if key in known})


@dataclass
class Store:
    """The two files of ``folder``; every method reads or writes them as they are on disk now."""

    folder: Path = field(default_factory=config_dir)

    @property
    def config_path(self) -> Path:
        return self.folder / CONFIG_FILE

    @property
    def credentials_path(self) -> Path:
        return self.folder / CREDENTIALS_FILE

    def profile(self, name: str) -> Profile:
        return Profile.from_json(_read(self.config_path).get("profiles", {}).get(name, {}))

    def save_profile(self, name: str, profile: Profile) -> None:
        document = _read(self.config_path)
        document.setdefault("profiles", {})[name] = {
            k: v for k, v in asdict(profile).items() if v is not None
        }
        self._write(self.config_path, document, private=False)

    def credential(self, name: str) -> Credential | None:
        values = _read(self.credentials_path).get(name)
        return Credential.from_json(values) if values else None

    def save_credential(self, name: str, credential: Credential) -> None:
        document = _read(self.credentials_path)
        document[name] = {k: v for k, v in asdict(credential).items() if v is not None}
        self._write(self.credentials_path, document, private=True)

    def forget_credential(self, name: str) -> bool:
        """Drop the profile's credential; whether there was one."""
        document = _read(self.credentials_path)
        if document.pop(name, None) is None:
            return False
        self._write(self.credentials_path, document, private=True)
        return True

    def _write(self, path: Path, document: Mapping[str, Any], *, private: bool) -> None:
        self.folder.mkdir(mode=0o700, parents=True, exist_ok=True)
        if private:
            self.folder.chmod(0o700)
        # mkstemp makes the file 0600 from the start; the settings file is then opened up to 0644.
        handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=self.folder)
        try:
            with os.fdopen(handle, "w", encoding="utf-8") as out:
                json.dump(document, out, indent=2, sort_keys=True)
                out.write("\n")
            if not private:
                Path(temporary).chmod(0o644)
            Path(temporary).replace(path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def _read(path: Path) -> dict[str, Any]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except ValueError as error:
        raise ValueError(f"{path} is not JSON ({error}): fix or remove it") from error
    if not isinstance(document, dict):
        raise ValueError(f"{path} does not hold a JSON object: fix or remove it")
    return document
