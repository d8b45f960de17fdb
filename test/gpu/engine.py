# A stand-in engine for the GPU check: serves a real vLLM /metrics capture on
# 127.0.0.1:8000 from the same process that runs bf16 matrix products on the
# GPU, so that NVML lists this PID as the GPU's compute process.
import http.server, threading, time, sys, os
import torch
body = open(sys.argv[1], "rb").read()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200); self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body))); self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 8000), H)
threading.Thread(target=srv.serve_forever, daemon=True).start()
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
torch.cuda.synchronize()
idle1, load, idle2 = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
def mark(s):
    print(f"{time.time():.3f} {s}", flush=True)
mark("idle"); time.sleep(idle1)
mark("load"); t0 = time.time(); n = 0
while time.time() - t0 < load:
    for _ in range(20): c = a @ b
    torch.cuda.synchronize(); n += 20
mark(f"idle2 products={n}"); time.sleep(idle2); mark("end")
