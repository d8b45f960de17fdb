# Reads NVML through NVIDIA's own Python bindings (nvidia-ml-py), a second
# path beside the daemon's go-nvml reads, and the daemon's /metrics, at the
# same instants, every second, as JSON lines.
import json, time, sys, urllib.request, pynvml
pynvml.nvmlInit(); h = pynvml.nvmlDeviceGetHandleByIndex(0)
dur = float(sys.argv[1]); out = open(sys.argv[2], "w")
t0 = time.time()
while time.time() - t0 < dur:
    r = {"t": time.time()}
    r["energy_mj"] = pynvml.nvmlDeviceGetTotalEnergyConsumption(h)
    r["power_mw"] = pynvml.nvmlDeviceGetPowerUsage(h)
    r["limit_mw"] = pynvml.nvmlDeviceGetEnforcedPowerLimit(h)
    r["sm_mhz"] = pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM)
    r["sm_max_mhz"] = pynvml.nvmlDeviceGetMaxClockInfo(h, pynvml.NVML_CLOCK_SM)
    r["reasons"] = pynvml.nvmlDeviceGetCurrentClocksEventReasons(h) if hasattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons") else pynvml.nvmlDeviceGetCurrentClocksThrottleReasons(h)
    r["mem_used"] = pynvml.nvmlDeviceGetMemoryInfo(h).used
    r["util"] = pynvml.nvmlDeviceGetUtilizationRates(h).gpu
    try: r["pids"] = [p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)]
    except Exception as e: r["pids"] = str(e)
    try:
        m = urllib.request.urlopen("http://127.0.0.1:9835/metrics", timeout=2).read().decode()
        r["daemon"] = [l for l in m.splitlines() if l.startswith(("llm_gpu", "llm_engine_gpu", "goodput_exporter_gpu", "llm_up"))]
    except Exception as e: r["daemon"] = str(e)
    out.write(json.dumps(r) + "\n"); out.flush()
    time.sleep(max(0, 1 - (time.time() - r["t"])))
