{{/* The mesh control server's name and the labels selecting its pod. */}}
{{- define "flexplane.meshName" -}}
{{- printf "%s-mesh" (include "flexplane.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The Service of the hub's CONNECT proxy, which the orchestrator's pods dial the agents through. */}}
{{- define "flexplane.meshProxyName" -}}
{{- printf "%s-mesh-proxy" (include "flexplane.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Whether the hub serves its CONNECT proxy (the mesh on, and its proxy not turned off). */}}
{{- define "flexplane.meshProxy" -}}
{{- $mesh := .Values.mesh | default dict }}
{{- if and (eq $mesh.enabled true) (ne (($mesh.proxy | default dict).enabled) false) }}true{{ end }}
{{- end }}

{{- define "flexplane.meshSelectorLabels" -}}
app.kubernetes.io/name: {{ include "flexplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: mesh
{{- end }}

{{- define "flexplane.meshLabels" -}}
helm.sh/chart: {{ include "flexplane.chart" . }}
{{ include "flexplane.meshSelectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The mesh's settings, for the orchestrator (enrollment) and the hub alike: empty when the mesh is off. */}}
{{- define "flexplane.meshEnv" -}}
{{- $mesh := .Values.mesh | default dict }}
- name: FLEXPLANE_MESH_RANGE
  value: {{ ternary $mesh.range "" (eq $mesh.enabled true) | quote }}
- name: FLEXPLANE_MESH_HUB_ENDPOINT
  value: {{ ternary $mesh.hubEndpoint "" (eq $mesh.enabled true) | quote }}
- name: FLEXPLANE_MESH_HUB_SECRET
  value: {{ $mesh.hubSecretName | default "flexplane-mesh-hub" | quote }}
- name: FLEXPLANE_MESH_KEEPALIVE
  value: {{ $mesh.keepalive | default 15 | quote }}
# The orchestrator's pods have no route to the mesh's range: they dial the agents through the hub's proxy.
- name: FLEXPLANE_MESH_PROXY
  {{- if include "flexplane.meshProxy" . }}
  value: {{ printf "http://%s.%s.svc:%v" (include "flexplane.meshProxyName" .) .Release.Namespace ($mesh.proxy | default dict).port | quote }}
  {{- else }}
  value: ""
  {{- end }}
{{- end }}

{{/* The hub's own ServiceAccount: it reads its key's Secret and the catalog's hosts and peers, nothing else. */}}
{{- define "flexplane.meshServiceAccountName" -}}
{{- include "flexplane.meshName" . }}
{{- end }}
