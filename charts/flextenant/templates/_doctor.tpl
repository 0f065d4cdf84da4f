{{/*
The preflight's names and labels (job_doctor.yaml, serviceaccount_doctor.yaml, clusterrole_doctor.yaml).
*/}}
{{- define "flexplane.doctorName" -}}
{{- printf "%s-doctor" (include "flexplane.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "flexplane.doctorLabels" -}}
helm.sh/chart: {{ include "flexplane.chart" . }}
app.kubernetes.io/name: {{ include "flexplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: doctor
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: flexplane
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}
