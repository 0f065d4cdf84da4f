"""Password hashing for development credentials."""

from __future__ import annotations

from django.contrib.auth.hashers import PBKDF2PasswordHasher


class DevelopmentPasswordHasher(PBKDF2PasswordHasher):
    """PBKDF2 with few iterations.

    Every password here is a published development password on a loopback-only server, so a
    slow hash protects nothing, while Django's default (a million iterations, about half a
    second) would be paid on every login, every password grant, every confidential client's
    token request and every re-seed. The hashes stay in the standard ``pbkdf2_sha256`` format.
    """

    iterations = 1_000
