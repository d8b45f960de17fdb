# Back-to-back bf16 matrix products on the GPU for argv[1] seconds.
import sys, time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
t0 = time.time(); n = 0
while time.time() - t0 < float(sys.argv[1]):
    for _ in range(20): c = a @ b
    torch.cuda.synchronize(); n += 20
print(f"{time.time():.3f} products={n}", flush=True)
