package discovery

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// openWatch opens a watch of pods that a hung API server cannot hold
// forever: the request must be answered within timeout (an API server
// answers a watch at once, with its headers), and once open, a watch
// that carries nothing (no event, no bookmark) for idle is closed, so
// that the reflector opens it again. answered is called for the opening
// and for every event or bookmark the watch carries.
//
// A hung API server (a stopped process, a dead node behind a live
// address) accepts connections and answers nothing: client-go then
// waits without limit on the request, and on an open watch it only
// sees that nothing happens.
func openWatch(ctx context.Context, pods PodClient, o metav1.ListOptions, timeout, idle time.Duration, answered func()) (watch.Interface, error) {
	ctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(timeout, cancel)
	w, err := pods.Watch(ctx, o)
	late := !timer.Stop()
	if err != nil {
		cancel()
		if late {
			return nil, fmt.Errorf("watch of pods not answered within %s: %w (%w)", timeout, context.DeadlineExceeded, err)
		}
		return nil, err
	}
	if late {
		// Answered as the timer fired: the context is gone, and with it
		// the stream.
		w.Stop()
		cancel()
		return nil, fmt.Errorf("watch of pods not answered within %s: %w", timeout, context.DeadlineExceeded)
	}
	wd := &watchdog{w: w, cancel: cancel, out: make(chan watch.Event), stop: make(chan struct{})}
	go wd.run(idle, answered)
	return wd, nil
}

// watchdog passes a watch's events on, noting each as an answer, and
// ends the watch when it has been silent for too long.
type watchdog struct {
	w      watch.Interface
	cancel context.CancelFunc
	out    chan watch.Event
	stop   chan struct{}
	once   sync.Once
}

func (wd *watchdog) run(idle time.Duration, answered func()) {
	defer close(wd.out)
	defer wd.cancel()
	defer wd.w.Stop()
	timer := time.NewTimer(idle)
	defer timer.Stop()
	in := wd.w.ResultChan()
	for {
		select {
		case <-wd.stop:
			return
		case <-timer.C:
			// Silent for idle: the reflector opens the watch again, and
			// that request, bounded by the timeout, says whether the API
			// server still answers.
			return
		case e, ok := <-in:
			if !ok {
				return
			}
			if e.Type != watch.Error {
				answered()
			}
			timer.Reset(idle)
			select {
			case wd.out <- e:
			case <-wd.stop:
				return
			}
		}
	}
}

// Stop ends the watch; the result channel closes.
func (wd *watchdog) Stop() { wd.once.Do(func() { close(wd.stop) }) }

// ResultChan carries the watch's events until it ends.
func (wd *watchdog) ResultChan() <-chan watch.Event { return wd.out }
