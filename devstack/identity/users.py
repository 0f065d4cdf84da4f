"""USERS.json: the users to seed, read and checked before anything else happens."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path


class UsersFileError(ValueError):
    """USERS.json cannot be read or does not describe a list of users."""


@dataclass(frozen=True)
class SeedUser:
    username: str
    password: str
    name: str
    email: str
    roles: tuple[str, ...]
    # The organisation (by name) that owns the user; its roles are granted within it.
    organization: str = "flexplane"

    @classmethod
    def from_json(cls, entry: object, where: str) -> SeedUser:
        if not isinstance(entry, Mapping):
            raise UsersFileError(f"{where}: a user must be an object, not {entry!r}")
        unknown = set(entry) - {"username", "password", "name", "email", "roles", "organization"}
        if unknown:
            raise UsersFileError(f"{where}: unknown keys {sorted(unknown)}")
        username = _required_string(entry, "username", where)
        where = f"{where} ({username})"
        password = _required_string(entry, "password", where)
        name = _optional_string(entry, "name", where) or username
        email = _optional_string(entry, "email", where)
        roles = entry.get("roles", [])
        if not isinstance(roles, list) or not all(isinstance(role, str) and role for role in roles):
            raise UsersFileError(f"{where}: 'roles' must be a list of non-empty strings")
        organization = _optional_string(entry, "organization", where) or "flexplane"
        return cls(
            username=username,
            password=password,
            name=name,
            email=email,
            roles=tuple(dict.fromkeys(roles)),
            organization=organization,
        )


def load_users(path: Path) -> list[SeedUser]:
    """The users listed in ``path``: ``[{"username", "password", "name", "email", "roles"}, ...]``."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except OSError as error:
        raise UsersFileError(f"cannot read the users file {path}: {error.strerror}") from error
    except json.JSONDecodeError as error:
        raise UsersFileError(f"the users file {path} is not valid JSON: {error}") from error
    if not isinstance(document, list):
        raise UsersFileError(f"the users file {path} must hold a JSON list of users")
    users = [SeedUser.from_json(entry, f"{path} entry {index}") for index, entry in enumerate(document)]
    usernames = [user.username for user in users]
    duplicates = sorted({name for name in usernames if usernames.count(name) > 1})
    if duplicates:
        raise UsersFileError(f"the users file {path} lists {', '.join(duplicates)} more than once")
    return users


def _required_string(entry: Mapping[str, object], key: str, where: str) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not value:
        raise UsersFileError(f"{where}: {key!r} must be a non-empty string")
    return value


def _optional_string(entry: Mapping[str, object], key: str, where: str) -> str:
    value = entry.get(key, "")
    if not isinstance(value, str):
        raise UsersFileError(f"{where}: {key!r} must be a string")
    return value
