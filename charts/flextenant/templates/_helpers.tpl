{{/*
Helpers of the flextenant chart (formerly "flexplane"). Every name is namespaced "flexplane." so that a parent chart's
helpers never collide with these.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "flexplane.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The resource name prefix: fullnameOverride, else "<release>-<chart>" (just "<release>" when it contains the chart name). */}}
{{- define "flexplane.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* "<chart>-<version>" for the helm.sh/chart label. */}}
{{- define "flexplane.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select the orchestrator's pods (never change them: selectors are immutable). */}}
{{- define "flexplane.selectorLabels" -}}
app.kubernetes.io/name: {{ include "flexplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: orchestrator
{{- end }}

{{/* The labels of every resource. */}}
{{- define "flexplane.labels" -}}
helm.sh/chart: {{ include "flexplane.chart" . }}
{{ include "flexplane.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: flexplane
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "flexplane.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "flexplane.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The platform namespace (FLEXPLANE_NAMESPACE): config.namespace, else the release namespace. */}}
{{- define "flexplane.platformNamespace" -}}
{{- default .Release.Namespace .Values.config.namespace }}
{{- end }}

{{/*
A repository under global.imageRegistry, when that is set: the repository's registry (its first segment
when that has a "." or a ":" or is "localhost", as container runtimes read it; else Docker Hub's) is
replaced and the path kept, so a mirror copied with the same paths serves every image. Called with
(dict "repository" ... "root" $).
*/}}
{{- define "flexplane.repository" -}}
{{- $registry := trimSuffix "/" ((.root.Values.global | default (dict)).imageRegistry | default "") }}
{{- $repository := .repository }}
{{- if $registry }}
{{- $parts := splitList "/" $repository }}
{{- $first := first $parts }}
{{- if and (gt (len $parts) 1) (or (contains "." $first) (contains ":" $first) (eq $first "localhost")) }}
{{- $repository = join "/" (rest $parts) }}
{{- end }}
{{- $repository = printf "%s/%s" $registry $repository }}
{{- end }}
{{- $repository }}
{{- end }}

{{/*
The image reference: repository:tag, the tag defaulting to appVersion (the project's version, make
image's tag), and @digest after it when image.digest is set (the digest is what is pulled then).
*/}}
{{- define "flexplane.image" -}}
{{- $repository := include "flexplane.repository" (dict "repository" .Values.image.repository "root" .) }}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" $repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{/* The Secret holding FLEXPLANE_SECRET_KEY, which the operator makes once (the chart generates none). */}}
{{- define "flexplane.secretKeySecretName" -}}
{{- .Values.secretKey.existingSecret }}
{{- end }}

{{/* The Secret holding the agents' CA and the orchestrator's client certificate. */}}
{{- define "flexplane.agentTLSSecretName" -}}
{{- .Values.agentTLS.secretName | default (printf "%s-agent-tls" (include "flexplane.fullname" .)) }}
{{- end }}

{{/* The ConfigMap of agent releases the orchestrator serves. */}}
{{- define "flexplane.agentReleasesConfigMapName" -}}
{{- .Values.agentReleases.configMap | default (printf "%s-agent-releases" (include "flexplane.fullname" .)) }}
{{- end }}

{{/*
The HTTPS URL nodes enroll at (FLEXPLANE_ENROLLMENT_URL): config.enrollment.url, else the first
ingress host that is not a wildcard when the ingress terminates TLS, else "" (each request's origin).
*/}}
{{- define "flexplane.enrollmentURL" -}}
{{- if .Values.config.enrollment.url }}
{{- .Values.config.enrollment.url | trimSuffix "/" }}
{{- else if and .Values.ingress.enabled .Values.ingress.tls.enabled }}
{{- $named := list }}
{{- range .Values.ingress.hosts }}
{{- if not (hasPrefix "*" .) }}
{{- $named = append $named . }}
{{- end }}
{{- end }}
{{- with $named }}
{{- printf "https://%s" (first .) }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Ingress's TLS Secret. */}}
{{- define "flexplane.ingressTLSSecretName" -}}
{{- .Values.ingress.tls.secretName | default (printf "%s-tls" (include "flexplane.fullname" .)) }}
{{- end }}

{{/*
The allowed hosts, as a JSON list: config.allowedHosts, else the ingress hosts (when the ingress is
enabled), else the Service's in-cluster names.
*/}}
{{- define "flexplane.allowedHosts" -}}
{{- $hosts := .Values.config.allowedHosts }}
{{- if and (not $hosts) .Values.ingress.enabled }}
{{- $hosts = .Values.ingress.hosts }}
{{- end }}
{{- if not $hosts }}
{{- $svc := include "flexplane.fullname" . }}
{{- $hosts = list (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace) }}
{{- end }}
{{- toJson $hosts }}
{{- end }}

{{/* The Host header of the probes: probes.host, else the first allowed host ("*" becomes "localhost"). */}}
{{- define "flexplane.probeHost" -}}
{{- if .Values.probes.host }}
{{- .Values.probes.host }}
{{- else }}
{{- $first := include "flexplane.allowedHosts" . | fromJsonArray | first | trimPrefix "." }}
{{- if eq $first "*" }}localhost{{ else }}{{ $first }}{{ end }}
{{- end }}
{{- end }}

{{/* An HTTP probe of the app: the path, the port and a Host header the app accepts. */}}
{{- define "flexplane.httpProbe" -}}
{{- $root := index . 0 }}
{{- $path := index . 1 -}}
httpGet:
  path: {{ $path }}
  port: http
  scheme: HTTP
  httpHeaders:
    - name: Host
      value: {{ include "flexplane.probeHost" $root | quote }}
{{- end }}

{{/* Checks that values.schema.json cannot express; each failure names the value to fix. */}}
{{- define "flexplane.validate" -}}
{{- if not .Values.secretKey.existingSecret }}
{{- fail `secretKey.existingSecret: name the Secret holding the session key, made once (the chart generates none: a render would make a new one and sign everyone out): kubectl -n <namespace> create secret generic flexplane-secret-key --from-literal=secret-key="$(openssl rand -base64 48)"` }}
{{- end }}
{{- if not .Values.agentCA.secretName }}
{{- fail `agentCA.secretName: name the Secret holding the platform CA (tls.crt, tls.key), made once (the chart generates none: a render would make a new CA and cut off every node): openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 -subj "/CN=flex.plane platform CA" -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign -keyout ca.key -out ca.crt; kubectl -n <namespace> create secret tls flexplane-agent-ca --cert=ca.crt --key=ca.key` }}
{{- end }}
{{- if and .Values.autoscaling.enabled (gt (int .Values.autoscaling.minReplicas) (int .Values.autoscaling.maxReplicas)) }}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" }}
{{- end }}
{{- if and .Values.ingress.enabled (not .Values.ingress.hosts) }}
{{- fail "ingress.hosts: list at least one host name when ingress.enabled is true" }}
{{- end }}
{{- if and (gt (int .Values.server.preStopSleepSeconds) 0) (le (int .Values.server.terminationGracePeriodSeconds) (int .Values.server.preStopSleepSeconds)) }}
{{- fail "server.terminationGracePeriodSeconds must exceed server.preStopSleepSeconds" }}
{{- end }}
{{- if and .Values.agentReleases.enabled (not .Values.agentReleases.publicKey) }}
{{- fail "agentReleases.publicKey: give the release public key (PEM) when agentReleases.enabled is true: nodes verify every release with it" }}
{{- end }}
{{- if and .Values.networkPolicy.enabled .Values.networkPolicy.egress.enabled }}
{{- $egress := .Values.networkPolicy.egress }}
{{- if not $egress.kubeAPI.cidrs }}
{{- fail "networkPolicy.egress.kubeAPI.cidrs: list the API server's addresses, or the restricted egress cuts the orchestrator off the management cluster" }}
{{- end }}
{{- if not $egress.identity.to }}
{{- fail "networkPolicy.egress.identity.to: list the identity provider's peers, or the restricted egress cuts the orchestrator off the identity provider" }}
{{- end }}
{{- if not $egress.agents.cidrs }}
{{- fail "networkPolicy.egress.agents.cidrs: list the Proxmox nodes' addresses, or the restricted egress cuts the orchestrator off the agents" }}
{{- end }}
{{- end }}
{{- end }}
