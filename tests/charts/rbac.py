"""A small RBAC evaluator over rendered charts, with their admission fences, for the charts' tests.

It answers the question an authorizer answers, "may ServiceAccount X do verb V on resource R (named N) in
namespace S?", from the Roles, ClusterRoles and bindings the charts render, the way Kubernetes' RBAC
authorizer does (rules are only additive; a Role applies in its namespace; a ClusterRole through a
RoleBinding in the binding's namespace, through a ClusterRoleBinding everywhere; ``resourceNames`` narrow
a rule to those names). Then, for writes, it asks the charts' ValidatingAdmissionPolicies (their CEL,
evaluated by cel-python on the AdmissionRequest Kubernetes would send) whether they admit it.

What an account could make of its grants is followed too (:meth:`Cluster.escalated`): a RoleBinding it may
create (RBAC, the ``bind`` check Kubernetes makes on the role, and the fence all agreeing) adds that role's
rules in that namespace, over and over until nothing more is gained.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import celpy

from tests.charts.kit import Manifest

RBAC_GROUP = "rbac.authorization.k8s.io"
# Kubernetes' own ClusterRoles an account might bind itself to, were it allowed: the worst of them.
BUILT_IN: dict[str, list[Mapping[str, Any]]] = {
    "cluster-admin": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]
}
# The kinds whose creation runs a pod, and so any account of the namespace: as good as its rights.
WORKLOADS = (
    ("", "pods"),
    ("", "replicationcontrollers"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("apps", "daemonsets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
)
# What an AdmissionRequest calls the verbs that reach admission.
OPERATIONS = {"create": "CREATE", "update": "UPDATE", "patch": "UPDATE", "delete": "DELETE"}


@dataclass(frozen=True)
class Account:
    """A ServiceAccount, as Kubernetes names its user."""

    namespace: str
    name: str

    @property
    def username(self) -> str:
        return f"system:serviceaccount:{self.namespace}:{self.name}"

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


@dataclass(frozen=True)
class Grant:
    """One rule, where it applies: in ``namespace``, or everywhere (None)."""

    namespace: str | None
    rule: Mapping[str, Any]
    role: str

    def covers(self, verb: str, group: str, resource: str, namespace: str, name: str | None) -> bool:
        """Whether this grant allows ``verb`` on ``resource`` of ``group`` in ``namespace`` ("" for the
        cluster scope), on the object ``name`` (None: a request that names none, e.g. list or create)."""
        if self.namespace is not None and self.namespace != namespace:
            return False
        rule = self.rule
        names = rule.get("resourceNames") or []
        return (
            _has(rule.get("apiGroups"), group)
            and _has(rule.get("resources"), resource)
            and _has(rule.get("verbs"), verb)
            and (not names or (name is not None and name in names))
        )


def _has(values: Iterable[str] | None, value: str) -> bool:
    return any(v == "*" or v == value for v in values or ())


def _resource_matches(pattern: str, resource: str) -> bool:
    """A policy rule's resource pattern against "plural" or "plural/subresource", as Kubernetes reads it:
    "*/*" everything, "*" every resource but no subresource, "x/*" x's subresources, "*/y" every y."""
    if pattern == "*/*":
        return True
    if pattern == "*":
        return "/" not in resource
    head, _, tail = pattern.partition("/")
    have_head, _, have_tail = resource.partition("/")
    return (head in ("*", have_head)) and (tail == have_tail or (tail == "*" and bool(have_tail)))


def _cel(value: Any) -> Any:
    return celpy.json_to_cel(value)


@dataclass
class Fence:
    """A ValidatingAdmissionPolicy that a binding puts to work (validationActions Deny)."""

    policy: Manifest
    env: celpy.Environment = field(default_factory=celpy.Environment)

    def _run(self, expression: str, activation: Mapping[str, Any]) -> Any:
        program = self.env.program(self.env.compile(expression))
        return program.evaluate(dict(activation))

    def expressions(self) -> list[str]:
        """Every CEL expression of the policy: its conditions, variables, validations and messages."""
        spec = self.policy["spec"]
        parts = [*spec.get("matchConditions", ()), *spec.get("variables", ()), *spec["validations"]]
        return [p[key] for p in parts for key in ("expression", "messageExpression") if key in p]

    def compiles(self) -> None:
        """Each expression parses as CEL (the API server refuses a policy whose CEL does not)."""
        for expression in self.expressions():
            self.env.compile(expression)

    def matches(self, request: Mapping[str, Any]) -> bool:
        spec = self.policy["spec"]
        resource = request["resource"]
        plural = resource["resource"] + (f"/{request['subResource']}" if request.get("subResource") else "")
        rules = spec["matchConstraints"]["resourceRules"]
        if not any(
            _has(r.get("apiGroups"), resource["group"])
            and _has(r.get("operations"), request["operation"])
            and any(_resource_matches(p, plural) for p in r.get("resources", ()))
            for r in rules
        ):
            return False
        activation = {"request": _cel(request)}
        return all(bool(self._run(c["expression"], activation)) for c in spec.get("matchConditions", ()))

    def refusals(self, request: Mapping[str, Any], obj: Any, old: Any) -> list[str]:
        """The messages of the validations this request fails (none: admitted), once it matches."""
        if not self.matches(request):
            return []
        spec = self.policy["spec"]
        activation: dict[str, Any] = {"request": _cel(request), "object": _cel(obj), "oldObject": _cel(old)}
        variables: dict[str, Any] = {}
        for variable in spec.get("variables", ()):
            activation["variables"] = _cel(variables)
            variables[variable["name"]] = self._run(variable["expression"], activation)
        activation["variables"] = celpy.celtypes.MapType(
            {celpy.celtypes.StringType(k): v for k, v in variables.items()}
        )
        return [
            v.get("message") or v.get("messageExpression") or v["expression"]
            for v in spec["validations"]
            if not bool(self._run(v["expression"], activation))
        ]


class Cluster:
    """The RBAC objects and admission fences of several rendered charts, installed side by side."""

    def __init__(self, rendered: Iterable[Manifest]) -> None:
        self.roles: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
        self.cluster_roles: dict[str, list[Mapping[str, Any]]] = dict(BUILT_IN)
        self.bindings: list[Manifest] = []
        policies: dict[str, Manifest] = {}
        enforced: set[str] = set()
        for m in rendered:
            kind, meta = m["kind"], m["metadata"]
            if kind == "Role":
                self.roles[(meta["namespace"], meta["name"])] = list(m.get("rules") or [])
            elif kind == "ClusterRole":
                self.cluster_roles[meta["name"]] = list(m.get("rules") or [])
            elif kind in ("RoleBinding", "ClusterRoleBinding"):
                self.bindings.append(m)
            elif kind == "ValidatingAdmissionPolicy":
                policies[meta["name"]] = m
            elif kind == "ValidatingAdmissionPolicyBinding" and "Deny" in m["spec"]["validationActions"]:
                enforced.add(m["spec"]["policyName"])
        self.fences = [Fence(policies[name]) for name in sorted(enforced & policies.keys())]

    # ------------------------------------------------------------------------------------------ RBAC

    def role_rules(self, ref: Mapping[str, Any], namespace: str | None) -> list[Mapping[str, Any]]:
        """The rules a roleRef points at (none when the role does not exist, as Kubernetes has it)."""
        if ref["kind"] == "ClusterRole":
            return self.cluster_roles.get(ref["name"], [])
        return self.roles.get((namespace or "", ref["name"]), [])

    def grants(self, account: Account, extra: Iterable[Manifest] = ()) -> list[Grant]:
        """Every rule that applies to ``account``, with where it applies."""
        out: list[Grant] = []
        for binding in [*self.bindings, *extra]:
            subjects = binding.get("subjects") or []
            if not any(
                s.get("kind") == "ServiceAccount"
                and s.get("name") == account.name
                and s.get("namespace") == account.namespace
                for s in subjects
            ):
                continue
            where = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
            ref = binding["roleRef"]
            out.extend(Grant(where, rule, ref["name"]) for rule in self.role_rules(ref, where))
        return out

    def rbac_allows(
        self,
        account: Account,
        verb: str,
        group: str,
        resource: str,
        namespace: str,
        name: str | None = None,
        extra: Iterable[Manifest] = (),
    ) -> bool:
        return any(g.covers(verb, group, resource, namespace, name) for g in self.grants(account, extra))

    # ------------------------------------------------------------------------------------- admission

    def refusals(
        self,
        account: Account,
        verb: str,
        group: str,
        resource: str,
        namespace: str,
        name: str,
        obj: Mapping[str, Any] | None = None,
        old: Mapping[str, Any] | None = None,
    ) -> list[str]:
        """What the fences say to this write (none: admitted). ``namespace`` is "" for a cluster-scoped
        object; a Namespace is sent, as the API server sends it, in its own name."""
        operation = OPERATIONS[verb]
        if obj is None and operation != "DELETE":
            obj = {"metadata": {"name": name, "namespace": namespace}}
        if old is None and operation != "CREATE":
            old = obj or {"metadata": {"name": name, "namespace": namespace}}
        request = {
            "operation": operation,
            "namespace": name if (group, resource) == ("", "namespaces") else namespace,
            "name": name,
            "resource": {"group": group, "version": "v1", "resource": resource},
            "subResource": "",
            "userInfo": {"username": account.username},
        }
        return [
            message
            for fence in self.fences
            for message in fence.refusals(request, obj if operation != "DELETE" else None, old)
        ]

    def may_write(
        self,
        account: Account,
        verb: str,
        group: str,
        resource: str,
        namespace: str,
        name: str,
        obj: Mapping[str, Any] | None = None,
        extra: Iterable[Manifest] = (),
    ) -> bool:
        """RBAC allows it and every fence admits it. A create names nothing to RBAC (it cannot be
        narrowed by name); the fences see the name."""
        named = None if verb == "create" else name
        return self.rbac_allows(
            account, verb, group, resource, namespace, named, extra
        ) and not self.refusals(account, verb, group, resource, namespace, name, obj)

    # ------------------------------------------------------------------------------------ escalation

    def may_bind(
        self, account: Account, ref: Mapping[str, Any], namespace: str, extra: Iterable[Manifest]
    ) -> bool:
        """Kubernetes' check on a binding's roleRef: ``bind`` on the role (by name), or holding every
        permission the role grants there already (escalation prevention)."""
        plural = "clusterroles" if ref["kind"] == "ClusterRole" else "roles"
        if self.rbac_allows(account, "bind", RBAC_GROUP, plural, namespace, ref["name"], extra):
            return True
        rules = self.role_rules(ref, namespace)
        grants = self.grants(account, extra)
        return bool(rules) and all(
            any(g.rule == rule and g.namespace in (None, namespace) for g in grants) for rule in rules
        )

    def escalated(self, account: Account, namespaces: Iterable[str]) -> list[Manifest]:
        """The RoleBindings and ClusterRoleBindings ``account`` could make for itself, to any role of
        the cluster, in ``namespaces`` or cluster-wide, until it can make no more."""
        gained: list[Manifest] = []
        refs = [{"kind": "ClusterRole", "name": n} for n in self.cluster_roles] + [
            {"kind": "Role", "name": n, "namespace": ns} for ns, n in self.roles
        ]
        while True:
            new = [
                b
                for b in self._bindings_to_try(account, refs, namespaces)
                if b not in gained and self._may_make(account, b, gained)
            ]
            if not new:
                return gained
            gained.extend(new)

    def _bindings_to_try(
        self, account: Account, refs: list[dict[str, str]], namespaces: Iterable[str]
    ) -> Iterator[Manifest]:
        subject = {"kind": "ServiceAccount", "name": account.name, "namespace": account.namespace}
        for ref in refs:
            clean = {"apiGroup": RBAC_GROUP, "kind": ref["kind"], "name": ref["name"]}
            if ref["kind"] == "ClusterRole":
                yield {
                    "kind": "ClusterRoleBinding",
                    "metadata": {"name": f"gained-{ref['name']}"},
                    "roleRef": clean,
                    "subjects": [subject],
                }
            for namespace in namespaces:
                if ref["kind"] == "Role" and ref["namespace"] != namespace:
                    continue
                yield {
                    "kind": "RoleBinding",
                    "metadata": {"name": f"gained-{ref['name']}", "namespace": namespace},
                    "roleRef": clean,
                    "subjects": [subject],
                }

    def _may_make(self, account: Account, binding: Manifest, gained: list[Manifest]) -> bool:
        namespace = binding["metadata"].get("namespace", "")
        plural = "rolebindings" if binding["kind"] == "RoleBinding" else "clusterrolebindings"
        name = binding["metadata"]["name"]
        return self.may_write(
            account, "create", RBAC_GROUP, plural, namespace, name, binding, gained
        ) and self.may_bind(account, binding["roleRef"], namespace, gained)

    def reads_secrets(self, account: Account, namespace: str, extra: Iterable[Manifest] = ()) -> list[Grant]:
        """The grants (with what it may gain) by which ``account`` reads any Secret of ``namespace``."""
        return [
            g
            for g in self.grants(account, extra)
            if g.namespace in (None, namespace)
            and _has(g.rule.get("apiGroups"), "")
            and _has(g.rule.get("resources"), "secrets")
            and any(_has(g.rule.get("verbs"), v) for v in ("get", "list", "watch"))
        ]
