{{/*
The backup's names and labels (cronjob_backup.yaml, serviceaccount_backup.yaml, role_backup.yaml,
clusterrole_backup.yaml).
*/}}
{{- define "flexplane.backupName" -}}
{{- printf "%s-backup" (include "flexplane.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "flexplane.backupLabels" -}}
helm.sh/chart: {{ include "flexplane.chart" . }}
app.kubernetes.io/name: {{ include "flexplane.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: backup
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: flexplane
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}
