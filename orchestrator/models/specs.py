"""One declaration per spec: a pydantic model whose fields say everything about each input.

A catalog kind (compute profile, storage profile, image, zone, host, Kubernetes version) is one
:class:`Spec` subclass. Each of its inputs is declared once, with :func:`field`: its type (the
annotation), its label (``title``), what it is (``description``), its limits (``ge``, ``le``,
``max_length``: pydantic's own), its choices, its default, whether a create needs it and whether it
identifies the object. The camelCase key it is stored under is its alias (``memory_mib`` ->
``memoryMib``), or the path of its ``validation_alias`` where the stored spec nests it
(``AliasPath("network", "idFirst")``).

From that one declaration come:

- (de)serialization: :meth:`Spec.from_spec` and :meth:`Spec.to_spec`, the ConfigMap's JSON, keys
  in declaration order;
- :class:`Kind` and its :class:`Input` views, which the GraphQL inputs (``graphql.inputs``), the
  portal's forms (``portal.admin.forms``) and the services' checks (``services.catalog.fields``,
  whose messages name the field) are made from.

A VDC is declared the same way (``models.vdcs``); its quota's inputs are stored under ``quota`` and
given together, as one object (a :class:`Group`).

Building a model checks types and limits (pydantic's own); reading a stored spec checks types only
(:meth:`Spec.from_spec`). What comes in from a caller is checked first, by ``services.catalog``
against the declaration, with messages that name the field. Specs that callers build positionally
and ``dataclasses.replace`` (a VDC's ``Usage``, security groups, gateways, mesh peers, hosts' drain
records) are pydantic dataclasses with the same camelCase config (``SPEC_CONFIG``, :class:`Stored`).
"""

from __future__ import annotations

import copy
import functools
import types
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, Self, TypeVar, Union, get_args, get_origin

import annotated_types
from pydantic import (
    AliasPath,
    BaseModel,
    ConfigDict,
    Field,
    TypeAdapter,
    ValidationError,
    create_model,
    model_validator,
)
from pydantic.alias_generators import to_camel
from pydantic.fields import FieldInfo

# The lengths every catalog kind shares: ids (DNS labels), display names, descriptions.
MAX_NAME_LENGTH = 63
MAX_TITLE_LENGTH = 200
MAX_DESCRIPTION_LENGTH = 2000


def number(value: float) -> str:
    """A limit in words: 512, 4194304, 0.1."""
    return str(int(value)) if float(value).is_integer() else f"{value:g}"


def field(
    default: Any = None,
    *,
    label: str,
    help: str = "",
    required: bool = False,
    ge: float | None = None,
    le: float | None = None,
    unit: str = "",
    choices: tuple[str, ...] = (),
    max_length: int | None = None,
    key: bool = False,
    widget: str = "",
    path: tuple[str, ...] = (),
    default_factory: Any = None,
    api: str | None = None,
    api_update: str | None = None,
) -> Any:
    """One input of a spec, declared once (see the module's docstring).

    ``required``: a create needs it (the model's default is then a blank, None, as an unmanaged Django
    model's was); ``key``: it identifies the object, an update never changes it; ``unit``: after a
    number in words (" MiB"); ``widget``: how the portal shows a string ("textarea", "url"); ``path``:
    where the stored spec nests it, when it does; ``api``: the API's words for it, where they are not the
    portal's (each audience then reads its own words as written, no limits or default added);
    ``api_update``: the update input's words, where they are not the create input's.
    """
    extra: dict[str, Any] = {
        "input": True,
        "required": required,
        "key": key,
        "unit": unit,
        "widget": widget,
        "api": api,
        "api_update": api_update,
    }
    if choices:
        extra["enum"] = list(choices)
    declared: dict[str, Any] = {
        "title": label,
        "description": help or None,
        "ge": ge,
        "le": le,
        "max_length": max_length,
        "validation_alias": AliasPath(*path) if path else None,
        "json_schema_extra": extra,
    }
    if default_factory is not None:
        return Field(default_factory=default_factory, **declared)
    return Field(default, **declared)


def id_field(default: Any = None, **more: Any) -> Any:
    """The id of a zone or a VDC: a DNS label that identifies it and never changes."""
    return field(
        default,
        label="Id",
        help="A lowercase slug of letters, digits and '-'; it cannot change later.",
        required=True,
        max_length=MAX_NAME_LENGTH,
        key=True,
        **more,
    )


def description_field(**more: Any) -> Any:
    """What an object is, in an admin's words (a few lines; empty by default)."""
    return field("", label="Description", max_length=MAX_DESCRIPTION_LENGTH, widget="textarea", **more)


# Every spec: stored in camelCase, built from either spelling, keys it does not know ignored.
SPEC_CONFIG = ConfigDict(
    alias_generator=to_camel,
    validate_by_name=True,
    validate_by_alias=True,
    extra="ignore",
    coerce_numbers_to_str=True,  # a number stored where text belongs reads as text, as it always did
)


class Spec(BaseModel):
    """A catalog object: its fields are its inputs (:func:`field`), its stored spec their camelCase JSON."""

    model_config = ConfigDict(frozen=True, **SPEC_CONFIG)

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Self:
        """The object of a stored spec; a value left null gets its default, keys it does not know are
        ignored. Limits are for input: a spec stored beyond one (written before it, by hand, or a list
        that reads longer joined) loads as stored; one whose types are wrong does not parse."""
        data = _without_nulls(spec)
        try:
            return cls.model_validate(data)
        except ValidationError:
            loose = _unlimited(cls).model_validate(data)
            return cls.model_construct(_fields_set=loose.model_fields_set, **dict(loose))

    def to_spec(self) -> dict[str, Any]:
        """The stored spec: each field under its key (or path), in declaration order."""
        dumped = self.model_dump(mode="json")
        spec: dict[str, Any] = {}
        for name, info in type(self).model_fields.items():
            if info.exclude:
                continue
            *parents, last = spec_path(name, info)
            where = spec
            for parent in parents:
                where = where.setdefault(parent, {})
            where[last] = dumped[name]
        return spec


_LIMITS = (annotated_types.Ge, annotated_types.Le, annotated_types.MaxLen)


@functools.cache
def _unlimited(cls: type[Spec]) -> type[Spec]:
    """``cls`` without its fields' limits (their types, defaults and validators kept), to read specs with."""
    fields: dict[str, Any] = {}
    for name, info in cls.model_fields.items():
        if any(isinstance(m, _LIMITS) for m in info.metadata):
            loose = copy.copy(info)
            loose.metadata = [m for m in info.metadata if not isinstance(m, _LIMITS)]
            fields[name] = (info.annotation, loose)
    made: type[Spec] = create_model(f"Unlimited{cls.__name__}", __base__=cls, **fields)
    return made


T = TypeVar("T")


_ADAPTERS: dict[type[Any], TypeAdapter[Any]] = {}  # made from the classes once: code, not state


def _adapter(cls: type[Any]) -> TypeAdapter[Any]:
    if cls not in _ADAPTERS:
        _ADAPTERS[cls] = TypeAdapter(cls)
    return _ADAPTERS[cls]


def load(cls: type[T], spec: Mapping[str, Any]) -> T:
    """A spec's value (a pydantic dataclass declared with ``SPEC_CONFIG``) from its stored JSON."""
    loaded: T = _adapter(cls).validate_python(_without_nulls(spec))
    return loaded


def dump(value: Any) -> Any:
    """A pydantic dataclass's stored JSON, in camelCase."""
    return _adapter(type(value)).dump_python(value, mode="json", by_alias=True)


class Stored:
    """``from_spec`` and ``to_spec`` for a pydantic dataclass declared with ``SPEC_CONFIG``."""

    @classmethod
    def from_spec(cls, spec: Mapping[str, Any]) -> Self:
        return load(cls, spec)

    def to_spec(self) -> dict[str, Any]:
        spec: dict[str, Any] = dump(self)
        return spec


def named_by_id(data: Any) -> Any:
    """A spec stored without a display name is shown by its id (a before model validator's body)."""
    if isinstance(data, Mapping) and not data.get("name") and data.get("id"):
        return {**data, "name": data["id"]}
    return data


class NamedById(Spec):
    """A spec with an ``id`` and a display ``name``: stored without a name, it is shown by its id."""

    @model_validator(mode="before")
    @classmethod
    def _named(cls, data: Any) -> Any:
        return named_by_id(data)


def _without_nulls(spec: Mapping[str, Any]) -> dict[str, Any]:
    return {k: _without_nulls(v) if isinstance(v, Mapping) else v for k, v in spec.items() if v is not None}


def spec_path(name: str, info: FieldInfo) -> tuple[str, ...]:
    """Where a field is stored in the spec: its alias, or the path it is nested at."""
    if isinstance(info.validation_alias, AliasPath):
        return tuple(str(part) for part in info.validation_alias.path)
    return (info.alias or name,)


# ------------------------------------------------------------------ the views the layers are made from


@dataclass(frozen=True)
class Input:
    """One input of a catalog kind, as its :func:`field` declares it (a view, not a declaration)."""

    name: str  # the service's name (snake_case); the API spells it in camelCase
    type: type  # str, int, float, bool, or list (the storages of a storage profile)
    label: str  # the portal's label
    help: str = ""  # what it is; the limits are added by ``description``
    required: bool = True  # whether a create needs it (an update may leave out any input)
    low: float | None = None
    high: float | None = None
    unit: str = ""  # after a number in words, e.g. " MiB"
    choices: tuple[str, ...] = ()
    max_length: int | None = None
    default: Any = None  # what a create that leaves it out gets
    key: bool = False  # it identifies the object: an update never changes it
    widget: str = ""  # how the portal shows a string: "textarea" or "url" (default: one line)
    api: str | None = None  # the API's words, where they are not the portal's (``help``)
    api_update: str | None = None  # the update input's words, where they are not the create input's
    group: str = ""  # the object it is given in, with others (a VDC's quota: ``quota.vcpus``), if any

    @property
    def description(self) -> str:
        """The API's description (and the portal's help text, unless the API has words of its own): what
        it is, its limits, its default."""
        if self.api is not None:
            return self.api
        parts = [self.help] if self.help else []
        if self.low is not None and self.high is not None:
            parts.append(f"{number(self.low)} to {number(self.high)}{self.unit}.")
        if self.choices:
            parts.append(f"One of {', '.join(self.choices)}.")
        if self.default not in (None, "", False):
            parts.append(f"Default {self.default}.")
        return " ".join(parts)

    @property
    def help_text(self) -> str:
        """The portal's help text: the description, or its own words as written where the API has others."""
        return self.help if self.api is not None else self.description

    @property
    def given_as(self) -> str:
        """Its name inside its group (``quota_vcpus`` -> ``vcpus``), or its name."""
        return self.name.removeprefix(f"{self.group}_") if self.group else self.name

    @classmethod
    def of(cls, name: str, info: FieldInfo, group: str = "") -> Input:
        extra = info.json_schema_extra
        assert isinstance(extra, dict), f"{name} is not declared with field()"
        low = high = None
        max_length = None
        for limit in info.metadata:
            low = getattr(limit, "ge", low)
            high = getattr(limit, "le", high)
            max_length = getattr(limit, "max_length", max_length)
        required = bool(extra["required"])
        default = None if required or info.default_factory is not None else info.default
        return cls(
            name=name,
            type=_scalar(info.annotation),
            label=info.title or name,
            help=info.description or "",
            required=required,
            low=low,
            high=high,
            unit=str(extra["unit"]),
            choices=tuple(str(c) for c in extra.get("enum") or ()),  # type: ignore[union-attr]  # a list, as field() writes it
            max_length=max_length,
            default=default,
            key=bool(extra["key"]),
            widget=str(extra["widget"]),
            api=_words(extra.get("api")),
            api_update=_words(extra.get("api_update")),
            group=group,
        )


def _words(value: Any) -> str | None:
    return None if value is None else str(value)


def _scalar(annotation: Any) -> type:
    """``int | None`` -> int; ``dict[str, str]`` -> list (the API lists a mapping's pairs)."""
    if get_origin(annotation) in (Union, types.UnionType):
        annotation = next(a for a in get_args(annotation) if a is not type(None))
    origin = get_origin(annotation) or annotation
    if origin in (dict, list):
        return list
    assert isinstance(origin, type)
    return origin


@dataclass(frozen=True)
class Group:
    """Inputs given together, as one object: the fields stored under ``name`` (a VDC's ``quota``), each
    named inside it without the prefix (``quota_vcpus`` is ``quota.vcpus``). Its words are the API's:
    its input type's (``doc``), and the create and update inputs' (``create``, ``update``)."""

    name: str
    doc: str
    create: str
    update: str
    required: bool = True  # whether a create needs it


@dataclass(frozen=True)
class Kind:
    """A catalog kind (or a VDC): its ConfigMap kind, the noun messages use, its inputs (made from its
    model) and the groups some of them are given in."""

    kind: str
    noun: str
    inputs: tuple[Input, ...]
    groups: tuple[Group, ...] = ()

    @classmethod
    def of(cls, model: type[Spec], kind: str, noun: str, groups: tuple[Group, ...] = ()) -> Kind:
        """The kind whose inputs are ``model``'s fields declared with :func:`field`, in their order; those
        stored under a group's name are given in that group."""
        named = {g.name for g in groups}
        inputs = []
        for name, info in model.model_fields.items():
            if isinstance(info.json_schema_extra, dict) and info.json_schema_extra.get("input"):
                path = spec_path(name, info)
                group = path[0] if len(path) > 1 and path[0] in named else ""
                assert not group or name.startswith(f"{group}_"), f"{name} is not named after {group}"
                inputs.append(Input.of(name, info, group))
        return cls(kind, noun, tuple(inputs), groups)

    def __getitem__(self, name: str) -> Input:
        return next(i for i in self.inputs if i.name == name)

    @property
    def names(self) -> tuple[str, ...]:
        """The names a caller gives, in order: each input's, a group's once in place of its inputs'."""
        return tuple(dict.fromkeys(i.group or i.name for i in self.inputs))

    def group(self, name: str) -> Group:
        return next(g for g in self.groups if g.name == name)

    def members(self, group: str) -> tuple[Input, ...]:
        """A group's inputs, each named as it is given inside the group (``vcpus``)."""
        return tuple(replace(i, name=i.given_as, group="") for i in self.inputs if i.group == group)

    @property
    def key_fields(self) -> tuple[str, ...]:
        return tuple(i.name for i in self.inputs if i.key)

    @property
    def defaults(self) -> dict[str, Any]:
        return {i.name: i.default for i in self.inputs if i.default is not None}
