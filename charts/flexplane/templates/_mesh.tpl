{{/* The mesh control server's name and the labels selecting its pod. */}}
{{- define "flexplane.meshName" -}}
{{- printf "%s-mesh" (include "flexplane.fullname" .) | trunc 63 | trimSuffix "-" }}
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
{{- end }}
