{{/*
Helpers of the providers chart. Every name is namespaced "providers." so that a parent chart's helpers
never collide with these.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "providers.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The resource name prefix: fullnameOverride, else "<release>-<chart>" (just "<release>" when it contains the chart name). */}}
{{- define "providers.fullname" -}}
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
{{- define "providers.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels that select the providers' pods (never change them: selectors are immutable). */}}
{{- define "providers.selectorLabels" -}}
app.kubernetes.io/name: {{ include "providers.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: providers
{{- end }}

{{/* The labels of every resource. */}}
{{- define "providers.labels" -}}
helm.sh/chart: {{ include "providers.chart" . }}
{{ include "providers.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: flexplane
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "providers.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "providers.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The ClusterRoles the providers bind themselves to in a VDC's namespace and a control plane's. */}}
{{- define "providers.vdcRole" -}}
{{- printf "%s-vdc" (include "providers.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "providers.controlPlaneRole" -}}
{{- printf "%s-control-plane" (include "providers.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The platform namespace (FLEXPLANE_NAMESPACE): config.namespace, else the release namespace. */}}
{{- define "providers.platformNamespace" -}}
{{- default .Release.Namespace .Values.config.namespace }}
{{- end }}

{{/*
A repository under global.imageRegistry, when that is set: the repository's registry (its first segment
when that has a "." or a ":" or is "localhost", as container runtimes read it; else Docker Hub's) is
replaced and the path kept, so a mirror copied with the same paths serves every image. Called with
(dict "repository" ... "root" $).
*/}}
{{- define "providers.repository" -}}
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
{{- define "providers.image" -}}
{{- $repository := include "providers.repository" (dict "repository" .Values.image.repository "root" .) }}
{{- $tag := .Values.image.tag | default .Chart.AppVersion }}
{{- if .Values.image.digest }}
{{- printf "%s:%s@%s" $repository $tag .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" $repository $tag }}
{{- end }}
{{- end }}

{{/* The Secret holding FLEXPLANE_SECRET_KEY, made once by the operator (the chart generates none). */}}
{{- define "providers.secretKeySecretName" -}}
{{- .Values.secretKey.existingSecret }}
{{- end }}

{{/* Checks that values.schema.json cannot express; each failure names the value to fix. */}}
{{- define "providers.validate" -}}
{{- if not .Values.secretKey.existingSecret }}
{{- fail "secretKey.existingSecret: name a Secret holding a secret key, made once (the chart generates none, so that a render changes nothing): the flextenant chart's, e.g. flexplane-secret-key" }}
{{- end }}
{{- if and .Values.networkPolicy.enabled .Values.networkPolicy.egress.enabled }}
{{- $egress := .Values.networkPolicy.egress }}
{{- if not $egress.kubeAPI.cidrs }}
{{- fail "networkPolicy.egress.kubeAPI.cidrs: list the API server's addresses, or the restricted egress cuts the providers off the management cluster" }}
{{- end }}
{{- if and (not .Values.config.meshProxy) (not $egress.agents.cidrs) }}
{{- fail "networkPolicy.egress.agents.cidrs: list the Proxmox nodes' addresses (or set config.meshProxy), or the restricted egress cuts the providers off the agents" }}
{{- end }}
{{- end }}
{{- if and .Values.sni.enabled (not .Values.sni.domain) }}
{{- fail "sni.domain: the domain the tenant clusters' host names are made under (<cluster>.<vdc>.<domain>), whose wildcard *.<domain> resolves to the SNI router's address" }}
{{- end }}
{{- end }}

{{/* The SNI router's selector labels: the chart's, as component sni-router. */}}
{{- define "providers.sniSelectorLabels" -}}
app.kubernetes.io/name: {{ include "providers.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: sni-router
{{- end }}

{{/* The labels of the SNI router's resources. */}}
{{- define "providers.sniLabels" -}}
helm.sh/chart: {{ include "providers.chart" . }}
{{ include "providers.sniSelectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: flexplane
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The SNI router's name. */}}
{{- define "providers.sniName" -}}
{{- printf "%s-sni" (include "providers.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}
