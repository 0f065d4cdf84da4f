"""The install walkthrough (docs/install.md, docs/kubernetes.md) rehearsed, not just read.

Every chart the walkthrough installs is rendered offline with exactly the values files and ``--set`` flags
its commands give (its shell variables replaced by the example values it defines), and must render, pass
Kubernetes' schemas and name its namespace; every Secret the rendered workloads read must be made by a
command of the walkthrough or by a chart. Then the first zone and catalog are made against the devstack
with the documents of the walkthrough's own ``curl`` commands, and its join token is asked for; the sizing it
states is summed from what the providers' hosted control plane requests.

Not rehearsed here: running the join command on a node. tests/artifacts/test_deb.py (``make test-artifacts``,
as root) installs the built ``.deb`` into debootstrap roots, but writes the enrollment's agent.toml itself
rather than running ``flexplane-agent bootstrap`` against an orchestrator; the bootstrap itself is run
against the devstack by tests/agent/test_bootstrap.py, from a checkout into a scratch root.
"""

from __future__ import annotations

import json
import re
import shlex
import textwrap
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import helm_python
import pytest
import yaml

from devstack.world import World
from providers.controlplane.etcd import render_etcd
from providers.controlplane.model import ControlPlane
from providers.controlplane.render import render_deployment
from tests.apikit import GraphQL
from tests.charts.kit import Manifest, manifests, merged
from tests.kubeschema import invalid

ROOT = Path(__file__).resolve().parents[2]
INSTALL = ROOT / "docs" / "install.md"
KUBERNETES = ROOT / "docs" / "kubernetes.md"
MANAGEMENT = "The management plane on a single-node k3s"
FIRST_ZONE = "The first zone and catalog"
ADDING = "Adding a node"

# What the walkthrough's command substitutions ($(kubectl ...), $(curl ...)) give on a real install, in
# their real shape: Zitadel's ids are numbers (which helm's --set would turn into integers), its client
# ids carry the project's name, a SHA-512 is 128 hex digits. The ADMIN token is the devstack's.
STAND_INS = {
    "PROJECT": "268744929287405571",
    "CLIENT": "268744929287471107@flexplane",
    "SUM": "0f" * 64,
    "ADMIN_TOKEN": "<the devstack's admin token>",
    "ADMIN_CLIENT_SECRET": "<pasted>",
    "KUBECONFIG": "/etc/rancher/k3s/k3s.yaml",
}
SHELL_VARIABLE = re.compile(r"\$\{([A-Z_][A-Z0-9_]*)\}|\$([A-Z_][A-Z0-9_]*)")


class WalkthroughError(AssertionError):
    """The walkthrough says something that cannot be run as written: the command and what is wrong."""


def section(doc: Path, heading: str) -> str:
    """The text under ``## heading`` (its ### subsections included), up to the next ``## `` heading."""
    text = doc.read_text()
    start = text.index(f"\n## {heading}\n")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else len(text)]


def shell_blocks(text: str) -> list[str]:
    """The bodies of the ```console and ```sh fences of ``text``."""
    found = re.findall(r"^( *)```(?:console|sh)\n(.*?)^ *```", text, flags=re.S | re.M)
    return [textwrap.dedent(body) for _indent, body in found]


def commands(block: str) -> Iterator[str]:
    """The block's commands, each on one line (continuations joined), heredocs' bodies left out, and
    comments dropped."""
    lines = iter(block.splitlines())
    for line in lines:
        while line.endswith("\\"):
            line = line[:-1] + " " + next(lines).strip()
        if line.lstrip().startswith("#") or not line.strip():
            continue
        if heredoc := re.search(r"<<-?'?(\w+)'?", line):
            for body in lines:
                if body.strip() == heredoc.group(1):
                    break
        yield line.strip()


def heredocs(block: str) -> list[str]:
    """The bodies of the block's heredocs (the YAML it applies)."""
    return [m.group(2) for m in re.finditer(r"<<-?'?(\w+)'?\n(.*?)^\1$", block, flags=re.S | re.M)]


def defines(command: str) -> bool:
    """Whether ``command`` only sets variables (``A=1 B=$(...)``, ``export A=1``, ``read -rs A``), rather
    than running a command with some set in its environment."""
    if command.startswith("read "):
        return True
    bare = re.sub(r"\$\([^)]*\)|\"[^\"]*\"|'[^']*'", "x", command.removeprefix("export "))
    return all(re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", word) for word in bare.split())


@dataclass
class Walkthrough:
    """The shell variables a walkthrough defines, with the values its commands give them."""

    values: dict[str, str] = field(default_factory=dict)

    def define(self, command: str) -> None:
        """Learn the variables ``command`` sets: ``NAME=value ...`` (alone on its line), ``export
        NAME=value``, ``read ... NAME``; a command substitution's value is its stand-in."""
        words = command.split()
        if words[0] == "read":
            self._set(words[-1], None)
            return
        assignments = command.removeprefix("export ")
        for match in re.finditer(r"(?:^|\s)([A-Z_][A-Z0-9_]*)=(\$\(|\S*)", assignments):
            self._set(match.group(1), None if match.group(2) == "$(" else match.group(2))

    def _set(self, name: str, value: str | None) -> None:
        if value is None or name in STAND_INS:
            if name not in STAND_INS:
                raise WalkthroughError(f"${name} comes from a command and the test has no stand-in for it")
            value = STAND_INS[name]
        self.values[name] = value

    def expand(self, command: str) -> str:
        """``command`` with each variable replaced; a variable the walkthrough never defined fails."""
        for braced, bare in SHELL_VARIABLE.findall(command):
            if (name := braced or bare) not in self.values:
                raise WalkthroughError(f"${name} is used before the walkthrough defines it: {command}")
        return SHELL_VARIABLE.sub(lambda m: self.values[m.group(1) or m.group(2)], command)

    def run(self, text: str) -> list[str]:
        """Every command of ``text``'s shell blocks, in order, variables defined as they come and
        replaced in every command after."""
        out = []
        for block in shell_blocks(text):
            for command in commands(block):
                if defines(command):
                    self.define(command)
                    continue
                out.append(self.expand(command))
        return out


@dataclass
class HelmInstall:
    """One ``helm install``/``upgrade``/``template`` of a chart of this repository."""

    release: str
    chart: str
    namespace: str | None
    values: dict[str, Any]
    command: str


def helm_install(command: str, releases: dict[str, dict[str, Any]]) -> HelmInstall | None:
    """The install ``command`` asks for, as helm reads its arguments (values files, then --set in order);
    None for a chart not of this repository or a helm command that installs nothing."""
    words = shlex.split(command)
    verb = words[1]
    if verb not in ("install", "upgrade", "template"):
        return None
    positional: list[str] = []
    namespace = None
    files: list[dict[str, Any]] = []
    sets: list[dict[str, Any]] = []
    reuse = False
    rest = iter(words[2:])
    for word in rest:
        if word in ("-n", "--namespace"):
            namespace = next(rest)
        elif word in ("-f", "--values"):
            files.append(yaml.safe_load((ROOT / next(rest)).read_text()) or {})
        elif word == "--set":
            sets.append(helm_python.parse_set_string(next(rest)))
        elif word == "--set-string":
            sets.append(helm_python.parse_set_string_values(next(rest)))
        elif word == "--timeout":
            next(rest)
        elif word == "--reuse-values":
            reuse = True
        elif word in ("--install", "--create-namespace", "--wait"):
            continue
        elif word.startswith("-"):
            raise WalkthroughError(f"helm flag {word} is not understood by the rehearsal: {command}")
        else:
            positional.append(word)
    release, chart = positional
    if not chart.startswith("charts/"):
        return None
    values: dict[str, Any] = releases.get(release, {}) if reuse else {}
    for each in files + sets:
        values = merged(values, each)
    return HelmInstall(release, chart, namespace, values, command)


def inline_helm_commands(text: str) -> list[str]:
    """The ``helm install``/``upgrade`` commands written inline in prose (`...` spans, maybe broken over
    lines), each on one line."""
    spans = re.findall(r"`(helm (?:upgrade|install|template)\b[^`]*)`", text)
    return [" ".join(span.split()) for span in spans]


def walkthrough_commands() -> tuple[Walkthrough, list[str]]:
    """The management plane's commands (docs/install.md) and the providers' chart install
    (docs/kubernetes.md), with the variables the walkthrough defines."""
    walk = Walkthrough()
    run = walk.run(section(INSTALL, MANAGEMENT))
    return walk, run + [walk.expand(c) for c in inline_helm_commands(KUBERNETES.read_text())]


@dataclass
class Rendered:
    install: HelmInstall
    manifests: list[Manifest]
    effective: dict[str, Any]  # the chart's values.yaml under the install's values


@pytest.fixture(scope="module")
def rendered() -> list[Rendered]:
    """Each chart install of the walkthrough, rendered as helm would render it."""
    releases: dict[str, dict[str, Any]] = {}
    out = []
    for command in walkthrough_commands()[1]:
        if not command.startswith("helm "):
            continue
        install = helm_install(command, releases)
        if install is None:
            continue
        releases[install.release] = install.values
        with helm_python.Chart.load(ROOT / install.chart) as chart:
            try:
                texts = chart.render(
                    install.values, name=install.release, namespace=install.namespace, is_install=True
                )
            except helm_python.HelmError as exc:
                raise WalkthroughError(f"{command}\ndoes not render: {exc}") from exc
            out.append(Rendered(install, manifests(texts), merged(dict(chart.values), install.values)))
    return out


def test_every_chart_of_the_walkthrough_renders_valid_manifests(rendered: list[Rendered]) -> None:
    assert {r.install.chart for r in rendered} == {"charts/identity", "charts/flextenant", "charts/providers"}
    for each in rendered:
        assert invalid(each.manifests) == [], each.install.command


def test_every_install_names_its_namespace() -> None:
    """Every helm install of both pages, of our charts or not, says where it goes."""
    text = INSTALL.read_text() + KUBERNETES.read_text()
    installs = [
        " ".join(command.split())
        for block in shell_blocks(text)
        for command in commands(block)
        if re.match(r"helm (upgrade|install)\b", command)
    ] + inline_helm_commands(text)
    assert len(installs) >= 6
    for command in installs:
        assert re.search(r"\s(-n|--namespace)\s+\S", command), f"no namespace: {command}"


def secret_refs(pod: dict[str, Any]) -> set[str]:
    """The Secrets a pod spec cannot start without (optional ones left out)."""
    names = set()
    for container in pod.get("containers", []) + pod.get("initContainers", []):
        for var in container.get("env", []):
            ref = var.get("valueFrom", {}).get("secretKeyRef")
            if ref and not ref.get("optional"):
                names.add(ref["name"])
        for source in container.get("envFrom", []):
            ref = source.get("secretRef")
            if ref and not ref.get("optional"):
                names.add(ref["name"])
    for volume in pod.get("volumes", []):
        if (secret := volume.get("secret")) and not secret.get("optional"):
            names.add(secret["secretName"])
        for source in volume.get("projected", {}).get("sources", []):
            if (secret := source.get("secret")) and not secret.get("optional"):
                names.add(secret["name"])
    return names


def pod_spec(manifest: Manifest) -> dict[str, Any] | None:
    spec = manifest.get("spec", {})
    if manifest["kind"] == "CronJob":
        spec = spec["jobTemplate"]["spec"]
    template = spec.get("template", {}).get("spec")
    return template if isinstance(template, dict) else None


def made_by_the_walkthrough(commands_run: list[str], text: str) -> set[tuple[str, str]]:
    """(namespace, name) of each Secret a command makes: ``kubectl -n NS create secret TYPE NAME``, and
    the Certificates its heredocs apply (cert-manager writes their secretName)."""
    made = set()
    for command in commands_run:
        if not re.match(r"kubectl .*\bcreate secret ", command):
            continue
        words = shlex.split(command)
        made.add((words[words.index("-n") + 1], words[words.index("secret") + 2]))
    for block in shell_blocks(text):
        for body in heredocs(block):
            for doc in yaml.safe_load_all(body):
                if doc and doc["kind"] == "Certificate":
                    made.add((doc["metadata"]["namespace"], doc["spec"]["secretName"]))
    return made


def made_by_the_charts(rendered: list[Rendered]) -> set[tuple[str, str]]:
    """Secrets a chart renders or has cert-manager write, and those the identity chart's bootstrap Job
    hands over (its values ``serviceUser.secret`` and ``portal.secret``: the service user's key and
    the portal's client)."""
    made = set()
    for each in rendered:
        for m in each.manifests:
            namespace = m["metadata"].get("namespace", each.install.namespace)
            if m["kind"] == "Secret":
                made.add((namespace, m["metadata"]["name"]))
            if m["kind"] == "Certificate":
                made.add((namespace, m["spec"]["secretName"]))
        if each.install.chart == "charts/identity":
            made |= handed_over(each.effective, each.install.namespace or "default")
    return made


def handed_over(values: dict[str, Any], release_namespace: str) -> set[tuple[str, str]]:
    """The identity chart's hand-over Secrets, where its values put them (empty namespaces defaulting
    as its values.yaml says: the service user's to the release's, the portal's to the service user's)."""
    service_user = values["serviceUser"]["secret"]
    service_namespace = service_user["namespace"] or release_namespace
    made = {(service_namespace, service_user["name"])}
    if values["portal"]["enabled"]:
        portal = values["portal"]["secret"]
        made.add((portal["namespace"] or service_namespace, portal["name"]))
    return made


def test_every_secret_the_workloads_read_is_made_by_the_walkthrough(rendered: list[Rendered]) -> None:
    _walk, run = walkthrough_commands()
    applied = section(INSTALL, MANAGEMENT) + KUBERNETES.read_text()
    made = made_by_the_walkthrough(run, applied) | made_by_the_charts(rendered)
    missing = set()
    for each in rendered:
        for m in each.manifests:
            spec = pod_spec(m)
            namespace = m["metadata"].get("namespace", each.install.namespace)
            for name in secret_refs(spec) if spec else ():
                if (namespace, name) not in made:
                    missing.add(f"{m['kind']}/{m['metadata']['name']} reads Secret {namespace}/{name}")
    assert sorted(missing) == []


def quantity(text: str) -> float:
    """A CPU (``250m``) in cores or a memory (``512Mi``, ``1Gi``) in MiB."""
    units = {"m": 0.001, "Mi": 1.0, "Gi": 1024.0}
    number, unit = re.fullmatch(r"([\d.]+)(m|Mi|Gi)?", text).groups()  # type: ignore[union-attr]
    return float(number) * (units[unit] if unit else 1.0)


def test_the_sizing_the_walkthrough_states_is_what_a_control_plane_requests() -> None:
    cp = ControlPlane(vdc="demo", cluster="web", version="v1.33.4")
    cpu = memory = 0.0
    for workload in [render_deployment(cp), *render_etcd(cp)]:
        if workload["kind"] not in ("Deployment", "StatefulSet"):
            continue
        for container in workload["spec"]["template"]["spec"]["containers"]:
            requests = container["resources"]["requests"]
            cpu += workload["spec"]["replicas"] * quantity(requests["cpu"])
            memory += workload["spec"]["replicas"] * quantity(requests["memory"])
    sizing = section(INSTALL, MANAGEMENT)
    assert f"{cpu:.2f} CPU and {memory / 1024:.1f} GiB of requests per cluster" in " ".join(sizing.split())


def documents(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The GraphQL calls of ``text``'s curl commands: (their URL, their JSON body), variables replaced."""
    walk = Walkthrough(dict(STAND_INS))
    walk.values |= {"ID": "id.example.com", "CLOUD": "cloud.example.com"}
    calls = []
    for command in walk.run(text):
        words = shlex.split(command)
        if words[0] != "curl" or "-d" not in words or "/graphql" not in words[-1]:
            continue
        assert f"Authorization: Bearer {STAND_INS['ADMIN_TOKEN']}" in words, command
        calls.append((words[-1], json.loads(words[words.index("-d") + 1])))
    return calls


def test_the_first_zone_catalog_and_join_token_as_the_walkthrough_makes_them(world: World) -> None:
    """Against the devstack, with its admin's token as $ADMIN_TOKEN: the first zone and catalog, then the
    join token of the walkthrough's first node, from the documents of its own commands."""
    api = GraphQL(world)
    headers = {"Authorization": f"Bearer {api.token('admin')}"}
    catalog = documents(section(INSTALL, FIRST_ZONE))
    join = documents(section(INSTALL, ADDING))[0]
    assert [url for url, _ in [*catalog, join]] == ["https://cloud.example.com/graphql"] * (len(catalog) + 1)
    assert len(catalog) == 4
    try:
        for _url, body in catalog:
            answer = api.raw(body["query"], headers=headers, variables=body.get("variables"))
            assert answer.status == 200, answer.body
            assert answer.errors == [], answer.body
            (payload,) = answer.data.values()
            assert payload["errors"] == [], payload
        answer = api.raw(join[1]["query"], headers=headers)
        token = answer.data["createHostJoinToken"]
        assert token["errors"] == [], token
        assert token["joinToken"]["command"].startswith("flexplane-agent bootstrap --orchestrator "), token
        assert " --token dc1.pve4." in token["joinToken"]["command"], token
    except BaseException:
        remove_first_catalog(api, headers)
        raise
    assert remove_first_catalog(api, headers) == [], "the shared devstack keeps the walkthrough's catalog"


def remove_first_catalog(api: GraphQL, headers: dict[str, str]) -> list[Any]:
    """Take the walkthrough's zone and catalog out of the shared devstack again (other suites list the
    catalog); what each removal answered that was not a success."""
    failed = []
    for mutation in (
        'deleteImage(name: "debian-12-cloud")',
        'deleteStorageProfile(name: "ssd")',
        'deleteComputeProfile(name: "general-2")',
        'deleteZone(id: "dc1")',
    ):
        answer = api.raw(f"mutation {{ {mutation} {{ errors {{ message }} }} }}", headers=headers)
        (payload,) = (answer.data or {}).values() or [None]
        if answer.errors or not payload or payload["errors"]:
            failed.append((mutation, answer.body))
    return failed


def test_every_namespace_is_made_before_it_is_used() -> None:
    """A ``-n NS`` of the management plane's commands names a namespace an earlier command made (``kubectl
    create namespace``, or the same command's ``--create-namespace``)."""
    _walk, run = walkthrough_commands()
    made: set[str] = set()
    for command in run:
        if created := re.match(r"kubectl create namespace (\S+)", command):
            made.add(created.group(1))
        used = re.search(r"\s(?:-n|--namespace)\s+(\S+)", command)
        if used and "--create-namespace" in command:
            made.add(used.group(1))
        assert used is None or used.group(1) in made, (
            f"namespace {used and used.group(1)} not made: {command}"
        )


def test_the_walkthrough_names_one_host_throughout() -> None:
    """The portal and API's name is $CLOUD's wherever the pages show it (no second example name for the
    same orchestrator), and Zitadel's is $ID's; the others are the registries', the apt repository's and
    the tenant API servers' domain behind the SNI router."""
    walk = walkthrough_commands()[0]
    others = {"registry.example.com", "registry.example.internal", "apt.example.com", "k8s.example.com"}
    expected = {walk.values["CLOUD"], walk.values["ID"], *others}
    for doc in (INSTALL, KUBERNETES):
        names = set(re.findall(r"[\w-]+(?:\.[\w-]+)*\.example\.(?:com|internal)", doc.read_text()))
        assert names <= expected, f"{doc.name} names {sorted(names - expected)}"
    (bootstrap,) = re.findall(r"flexplane-agent bootstrap --orchestrator (\S+)", section(INSTALL, ADDING))
    assert bootstrap == f"https://{walk.values['CLOUD']}"
