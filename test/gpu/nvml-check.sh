#!/bin/bash
# The NVML backend and process attribution on a real GPU, against NVIDIA's
# own Python bindings read every second (docs/gpu.md, "Measured on a real
# GPU"). Needs: GPU 0, python3 with torch and nvidia-ml-py, the daemon's
# binary in $EXPORTER (default ./goodput-exporter) and a vLLM /metrics
# capture in $CAPTURE. Writes its readings under $OUT (default /tmp/gpu-check).
set -u
D=$(dirname "$0"); O=${OUT:-/tmp/gpu-check}; X=${EXPORTER:-./goodput-exporter}
CAPTURE=${CAPTURE:-collector/testdata/fixtures/vllm/v1-kops-conformance-2026-03-qwen2.5-0.5b.prom}
mkdir -p "$O"
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE > "$O/nvidia-smi.txt" 2>&1
python3 "$D/engine.py" "$CAPTURE" 15 45 15 > "$O/engine.log" 2>&1 &
EP=$!; sleep 8
"$X" --gpu.backend=nvml --collect.interval=1s --target vllm-0=http://127.0.0.1:8000/metrics > "$O/daemon.log" 2>&1 &
DP=$!
python3 "$D/sample.py" 75 "$O/samples.jsonl"
wait $EP; kill $DP
