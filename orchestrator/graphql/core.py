"""The one mutation shape: arguments in, one service call, its result or its failure in the payload.

A mutation declares the role it needs (written into its description; the service enforces it),
the service function it calls, the payload field the result goes to and its domain's error type::

    class DeleteImage(ServiceMutation):
        class Meta:
            role = ADMIN
            service = catalog.delete_image
            result = "image"
            error = CatalogError
            description = "Remove an image from the catalog; VMs made from it keep running."

        class Arguments:
            name = graphene.String(required=True)

        image = graphene.Field(Image, description="The image as it was.")

The service is called with the request's ``Context`` and the arguments in the order they are
declared (absent ones as None); the services speak the API's words (``host``, not ``node``), so its
fields and an error's field pass through as they are. An expected failure (a domain error) becomes
the payload's ``errors { field message code }``; UNAUTHENTICATED and FORBIDDEN stay top-level errors.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

import graphene
from graphene.types.mutation import MutationOptions

from orchestrator.errors import FlexPlaneError
from orchestrator.graphql.errors import payload_errors
from orchestrator.services import audit
from orchestrator.services.context import Context


def flexplane(info: graphene.ResolveInfo) -> Context:
    """The service context of the request being resolved."""
    ctx: Context = info.context.flexplane
    return ctx


@dataclass(frozen=True)
class Role:
    """Who may call a mutation, as its description tells it (the service enforces it)."""

    name: str
    doc: str


ADMIN = Role("ADMIN", "Needs ADMIN.")
VDC_MEMBER = Role(
    "VDC_MEMBER", "Needs USER and membership of the VDC named by the FlexPlane-VDC-ID header (or ADMIN)."
)
VM_MEMBER = Role(
    "VM_MEMBER",
    "Needs USER or ADMIN and membership of the VM's VDC (another VDC's VM is NOT_FOUND).",
)


@dataclass(frozen=True)
class Shared:
    """What a domain's mutations have in common: the role, the error type, the payload's result field.

    An abstract base gives it once to each of its mutations, which then declare only their service,
    description and arguments::

        class ClusterMutation(ServiceMutation):
            class Meta:
                abstract = True

            shared = Shared(VDC_MEMBER, KubernetesClusterError, "kubernetes_cluster")
            kubernetes_cluster = graphene.Field(KubernetesCluster)
    """

    role: Role
    error: type[graphene.ObjectType]
    result: str | None = None


class ServiceMutationOptions(MutationOptions):
    role: Role
    service: Callable[..., Any]
    result: str | None = None
    codes: frozenset[str] = frozenset()
    # The arguments in the order the class declares them (graphene's own order is not that).
    order: tuple[str, ...] = ()


class ServiceMutation(graphene.Mutation):
    """The base of every mutation: see the module's docstring."""

    _meta: ServiceMutationOptions
    # What the mutation shares with the others of its abstract base; its Meta may say otherwise.
    shared: ClassVar[Shared | None] = None

    class Meta:
        abstract = True

    @classmethod
    def __init_subclass_with_meta__(
        cls,
        service: Callable[..., Any],
        role: Role | None = None,
        error: type[graphene.ObjectType] | None = None,
        result: str | None = None,
        name: str | None = None,
        description: str | None = None,
        _meta: ServiceMutationOptions | None = None,
        **options: Any,
    ) -> None:
        if cls.shared is not None:
            role, error, result = (
                role or cls.shared.role,
                error or cls.shared.error,
                result or cls.shared.result,
            )
        assert role is not None, f"{cls.__name__} must name its role"
        assert error is not None, f"{cls.__name__} must name its error type"
        _meta = _meta or ServiceMutationOptions(cls)
        _meta.role = role
        _meta.service = service
        _meta.result = result
        arguments = getattr(cls, "Arguments", object)
        declared = {name: None for base in reversed(arguments.__mro__) for name in vars(base)}
        _meta.order = tuple(name for name in declared if not name.startswith("_"))
        _meta.codes = frozenset(error._meta.fields["code"].type.of_type._meta.enum.__members__)
        cls.errors = graphene.List(
            graphene.NonNull(error), required=True, description="Why it did not happen; empty on success."
        )
        text = " ".join(part for part in (description or cls.__doc__ or "", role.doc) if part)
        super().__init_subclass_with_meta__(
            name=name or f"{cls.__name__}Payload", description=text, _meta=_meta, **options
        )

    @classmethod
    def call(cls, info: graphene.ResolveInfo, **args: Any) -> Any:
        """The service call: the context, then the arguments as declared. Override to adapt them."""
        return cls._meta.service(flexplane(info), *(args.get(name) for name in cls._meta.order))

    @classmethod
    def answer(cls, result: Any) -> dict[str, Any]:
        """The payload's fields for what the service returned (``errors`` too, for a partial success)."""
        assert cls._meta.result is not None, f"{cls.__name__} must name its result field or answer()"
        return {cls._meta.result: result}

    @classmethod
    def failed(cls, exc: FlexPlaneError) -> dict[str, Any]:
        """The payload's fields besides ``errors`` when the service failed (none by default)."""
        return {}

    @classmethod
    def mutate(cls, root: None, info: graphene.ResolveInfo, **args: Any) -> ServiceMutation:
        """The call, with its one audit record (``services.audit``) however it ends."""
        request = getattr(info.context, "request", None)
        with audit.audited(
            flexplane(info),
            info.field_name,
            via=audit.API,
            client=audit.client_of(request),
            targets=audit.targets_of(args),
        ) as trail:
            try:
                result = cls.call(info, **args)
            except FlexPlaneError as exc:
                trail.failed(exc)
                return cls(errors=payload_errors(exc, cls._meta.codes), **cls.failed(exc))
            trail.succeeded(result)
            return cls(**{"errors": [], **cls.answer(result)})
