{{/* The chart's name. */}}
{{- define "goodput-exporter.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The objects' name: the release's, unless it already contains the chart's. */}}
{{- define "goodput-exporter.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "goodput-exporter.selectorLabels" -}}
app.kubernetes.io/name: {{ include "goodput-exporter.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "goodput-exporter.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "goodput-exporter.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: exporter
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "goodput-exporter.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "goodput-exporter.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "goodput-exporter.configMapName" -}}
{{- default (include "goodput-exporter.fullname" .) .Values.existingConfigMap -}}
{{- end -}}

{{- define "goodput-exporter.webSecretName" -}}
{{- default (printf "%s-web-config" (include "goodput-exporter.fullname" .)) .Values.webConfig.existingSecret -}}
{{- end -}}
