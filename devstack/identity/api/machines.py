"""Service accounts as Zitadel's v2 UserService keeps them: machine users, their JWT profile keys, deletion.

A machine user is a local user without a password (it cannot sign in at the login page) with an
``Account`` marked ``machine``; its key pair is generated here, the public half kept and the private half
answered once, in the key file's JSON that Zitadel answers (``keyContent``, base64). Deleting the user
takes its authorizations, keys and issued tokens with it, so its next token is refused.
"""

from __future__ import annotations

import base64
import datetime
import json
import time
import uuid

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone
from django.utils.dateparse import parse_datetime
from oauth2_provider.settings import oauth2_settings

from devstack.identity.api.errors import ConnectError
from devstack.identity.api.handlers import Body, _string, _timestamp, fields
from devstack.identity.api.models import Account, ApiToken, MachineKey, Organization, new_id
from devstack.identity.claims import user_claims
from devstack.identity.config import current_config
from devstack.identity.oauth import ACCESS_TOKEN_TYPE, SIGNING_ALGORITHM, signing_key

_KEY_BITS = 2048


def create_user(body: Body) -> Body:
    """``CreateUser`` for a machine user (a human is created through USERS.json here)."""
    where = "CreateUserRequest"
    values = fields(body, ("organization_id", "user_id", "username", "human", "machine"), where)
    if "human" in values or not isinstance(values.get("machine"), dict):
        raise ConnectError("unimplemented", "only machine users are created through this API here")
    machine = fields(values["machine"], ("name", "description"), "CreateUserRequest.Machine")
    name = _string(machine, "name", "CreateUserRequest.Machine")
    description = _string(machine, "description", "CreateUserRequest.Machine", required=False)
    org = Organization.objects.filter(id=_string(values, "organization_id", where)).first()
    if org is None:
        raise ConnectError("not_found", "Errors.Org.NotFound (COMMAND-2M0fs)")
    user_id = _string(values, "user_id", where, required=False) or new_id()
    username = _string(values, "username", where, required=False) or user_id
    if User.objects.filter(username=username).exists() or Account.objects.filter(zitadel_id=user_id).exists():
        raise ConnectError("already_exists", "Errors.User.AlreadyExists (COMMAND-k2unb)")
    with transaction.atomic():
        user = User.objects.create(username=username, first_name=name, last_name=description)
        user.set_unusable_password()
        user.save(update_fields=["password"])
        Account.objects.create(user=user, zitadel_id=user_id, organization=org, machine=True)
    return {"id": user_id, "creationDate": _timestamp(timezone.now())}


_TOKEN_TYPES = {"ACCESS_TOKEN_TYPE_BEARER": False, "ACCESS_TOKEN_TYPE_JWT": True}


def update_machine(user_id: str, body: Body) -> Body:
    """v1 ``UpdateMachine``: the name, description and access token type of a machine user."""
    where = "UpdateMachineRequest"
    values = fields(body, ("name", "description", "access_token_type"), where)
    account = _machine(user_id)
    if not account.machine:
        raise ConnectError("not_found", "Errors.User.NotFound (COMMAND-2M0fs)")
    token_type = values.get("access_token_type", "ACCESS_TOKEN_TYPE_BEARER")
    if token_type not in _TOKEN_TYPES:
        raise ConnectError("invalid_argument", f"invalid {where}.access_token_type {token_type!r}")
    user = account.user
    user.first_name = _string(values, "name", where)
    user.last_name = _string(values, "description", where, required=False)
    user.save(update_fields=["first_name", "last_name"])
    account.jwt_access_tokens = _TOKEN_TYPES[token_type]
    account.save(update_fields=["jwt_access_tokens"])
    return {
        "details": {
            "sequence": "2",
            "changeDate": _timestamp(timezone.now()),
            "resourceOwner": account.organization_id,
        }
    }


def _machine(user_id: str) -> Account:
    account = Account.objects.filter(zitadel_id=user_id).first()
    if account is None:
        raise ConnectError("not_found", "Errors.User.NotFound (COMMAND-2M0fs)")
    return account


def add_key(body: Body) -> Body:
    """``AddKey``: a new RSA key pair for a machine user; the private key is answered now only."""
    where = "AddKeyRequest"
    values = fields(body, ("user_id", "expiration_date", "public_key"), where)
    account = _machine(_string(values, "user_id", where))
    if not account.machine:
        raise ConnectError("failed_precondition", "Errors.User.NotMachine (COMMAND-5Fhfs)")
    if values.get("public_key"):
        raise ConnectError("unimplemented", "keys are generated here: send no public_key")
    expires = _expiry(values.get("expiration_date"), where)
    private = rsa.generate_private_key(public_exponent=65537, key_size=_KEY_BITS)
    private_pem = private.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    ).decode("ascii")
    public_pem = (
        private.public_key()
        .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        .decode("ascii")
    )
    key_id = new_id()
    MachineKey.objects.create(
        key_id=key_id,
        user_id=account.zitadel_id,
        name=account.user.username,
        public_key=public_pem,
        expires=expires,
    )
    content = {
        "type": "serviceaccount",
        "keyId": key_id,
        "key": private_pem,
        "userId": account.zitadel_id,
        "expirationDate": _timestamp(expires) if expires else "9999-12-31T23:59:59Z",
    }
    return {
        "keyId": key_id,
        "keyContent": base64.b64encode(json.dumps(content).encode()).decode("ascii"),
        "creationDate": _timestamp(timezone.now()),
    }


def remove_key(body: Body) -> Body:
    """``RemoveKey``: the machine user's key is gone; an assertion signed with it gets no token."""
    where = "RemoveKeyRequest"
    values = fields(body, ("user_id", "key_id"), where)
    account = _machine(_string(values, "user_id", where))
    removed, _ = MachineKey.objects.filter(
        user_id=account.zitadel_id, key_id=_string(values, "key_id", where)
    ).delete()
    if not removed:
        raise ConnectError("not_found", "Errors.User.Machine.Key.NotFound (COMMAND-4m77G)")
    return {"deletionDate": _timestamp(timezone.now())}


def _expiry(value: object, where: str) -> datetime.datetime | None:
    if value in (None, ""):
        return None
    moment = parse_datetime(value) if isinstance(value, str) else None
    if moment is None or moment.tzinfo is None:
        raise ConnectError("invalid_argument", f"{where}.expiration_date must be an RFC 3339 timestamp")
    if moment <= timezone.now():
        raise ConnectError("invalid_argument", "Errors.MachineKey.ExpireBeforeNow (COMMAND-dsg5s)")
    return moment


def delete_user(body: Body) -> Body:
    """``DeleteUser``: the user, its authorizations, keys and issued tokens are gone."""
    account = _machine(
        _string(fields(body, ("user_id",), "DeleteUserRequest"), "user_id", "DeleteUserRequest")
    )
    with transaction.atomic():
        MachineKey.objects.filter(user_id=account.zitadel_id).delete()
        ApiToken.objects.filter(user_id=account.zitadel_id).delete()
        account.user.delete()  # the account and its authorizations follow (on_delete=CASCADE)
    return {"details": {"sequence": "1", "changeDate": _timestamp(timezone.now()), "resourceOwner": ""}}


def access_token(account: Account, scopes: list[str], lifetime: int) -> str:
    """A JWT access token for a machine user, as Zitadel issues one to a user whose token type is JWT.

    It carries the user's roles as a person's token does, so the orchestrator checks both alike.
    """
    config = current_config()
    key = signing_key(oauth2_settings.OIDC_RSA_PRIVATE_KEY)
    issued_at = int(time.time())
    claims = {
        "iss": config.issuer,
        "aud": [config.project_id, account.zitadel_id],
        "iat": issued_at,
        "nbf": issued_at,
        "exp": issued_at + lifetime,
        "jti": str(uuid.uuid4()),
        "client_id": account.zitadel_id,
        "scope": " ".join(scopes),
        **user_claims(account.user, config.project_id),
        "name": account.user.first_name,  # a machine user's name (its description is no part of it)
    }
    return jwt.encode(
        claims,
        key.private_key,
        algorithm=SIGNING_ALGORITHM,
        headers={"typ": ACCESS_TOKEN_TYPE, "kid": key.kid},
    )
