package main

import (
	"bufio"
	"context"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goodput-exporter/goodput-exporter/exporter"
	"github.com/goodput-exporter/goodput-exporter/internal/chromium"
)

var screenshot = flag.String("status.screenshot", "", "write a PNG of the demo's status page under queue_growth to this file (docs/status-page.png)")

var (
	chartPaths = regexp.MustCompile(`<path d="M[0-9.]+ [0-9.]+`)
	sloRow     = regexp.MustCompile(`<td>(ttft|tpot|error)</td><td>[^<]+</td><td>(99|95)\.0 %</td><td class="(met|below)">[0-9.]+ %</td>`)
)

// The demo's status page in headless chromium: the goodput table and the
// charts render, and pressing a lever button on the page makes the
// verdict follow. The simulation runs 30 times faster than the wall
// clock (the classifier's window is 2 s of wall time).
func TestStatusPageInBrowser(t *testing.T) {
	chromium.Path(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"demo", "--web.listen-address=127.0.0.1:0", "--speed=30", "--tour=healthy:1h",
			"--collect.interval=500ms", "--refresh=1s", "--duration=3m"}, pw, io.Discard)
		pw.Close()
	}()
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "status: "); ok {
				urls <- strings.Fields(u)[0]
			}
		}
	}()
	var base string
	select {
	case base = <-urls:
	case <-time.After(20 * time.Second):
		t.Fatal("the demo printed no status URL")
	}
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("demo returned %v", err)
		}
	}()

	// The table and the charts are in the DOM the browser built: both
	// engines, a row per objective with its target and attainment, five
	// charts each and a line drawn in most (a lone point of running
	// requests between two failed scrapes counts: the race detector can
	// slow a scrape past its timeout).
	deadline := time.Now().Add(40 * time.Second)
	for {
		dom := chromium.DumpDOM(t, base)
		ok := strings.Contains(dom, `data-target="vllm-0">`) && strings.Contains(dom, `data-target="sglang-1">`) &&
			len(sloRow.FindAllString(dom, -1)) >= 5 && // chat: ttft, tpot, error; chat-latency: ttft, tpot
			strings.Count(dom, "<svg") == 10 && len(chartPaths.FindAllString(dom, -1)) >= 6
		if ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page never showed both targets with their SLO rows and charts (rows %d, charts %d, lines %d):\n%s",
				len(sloRow.FindAllString(dom, -1)), strings.Count(dom, "<svg"), len(chartPaths.FindAllString(dom, -1)), dom)
		}
		time.Sleep(500 * time.Millisecond)
	}

	// The same without JavaScript: the noscript refresh is live (its
	// content parses as elements only when scripts are off), the table and
	// the charts are there.
	nojs := chromium.Open(t, "about:blank", 1100, 900)
	nojs.DisableScripts()
	nojs.Navigate(base)
	nojs.WaitFor("the page without scripts", `document.querySelector('noscript meta[http-equiv="refresh"]') !== null && `+
		`document.querySelectorAll('table.slo tr').length >= 6 && document.querySelectorAll('.chart svg').length === 10`, 20*time.Second)

	// A lever button: the page reloads, marks the lever, and within a few
	// windows names the mode, with its runbook.
	p := chromium.Open(t, base, 1100, 900)
	const verdict = `document.querySelector('[data-verdict="vllm-0"]').textContent`
	p.WaitFor("a healthy verdict", verdict+` === "none"`, 30*time.Second)
	if *screenshot != "" {
		time.Sleep(15 * time.Second) // a healthy stretch in the charts before the incident
	}
	// The screenshot shows queue_growth; the test pulls engine_stall, whose
	// signature (requests in flight, no token) does not depend on how fast
	// the race detector lets the simulator run, unlike a queue's slope.
	lever := "engine_stall"
	if *screenshot != "" {
		lever = "queue_growth"
	}
	p.Eval(`document.querySelector('form[data-target="vllm-0"] button[value="` + lever + `"]').click()`)
	p.WaitFor("the lever marked", `document.querySelector('form[data-target="vllm-0"] button.on').value === "`+lever+`"`, 40*time.Second)
	p.WaitFor(lever+" named", verdict+`.includes("`+lever+`")`, 60*time.Second)
	if href := p.String(`document.querySelector('section[data-target="vllm-0"] .evidence a').href`); href != exporter.RunbookBase+lever {
		t.Errorf("runbook link %q, want %q", href, exporter.RunbookBase+lever)
	}
	// The lever is the vLLM engine's alone: the SGLang engine's stays
	// healthy. Its verdict is not asserted: under -race on a busy machine
	// its own scrapes can time out, which the classifier rightly reads as
	// a stall.
	if got := p.String(`document.querySelector('form[data-target="sglang-1"] button.on').value`); got != "healthy" {
		t.Errorf("the other engine's lever is %q, want healthy", got)
	}
	if *screenshot != "" {
		time.Sleep(3 * time.Second) // the page refreshes itself meanwhile
		p.WaitFor("queue_growth still named", verdict+`.includes("queue_growth")`, time.Second)
		if err := os.WriteFile(*screenshot, p.Screenshot(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
