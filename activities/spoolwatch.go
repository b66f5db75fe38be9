package activities

import (
	"path/filepath"
	"sync"

	"github.com/fsnotify/fsnotify"
)

// spoolWatch tells the runs that follow spool folders when something in
// theirs changed (the CLI wrote output, the supervisor recorded the exit),
// so that a run learns of its CLI's exit the moment it is recorded instead
// of at its next poll. One inotify instance serves every run of the
// runner (the instances a user may open are few, watches many); without
// one, runs poll only.
type spoolWatch struct {
	once    sync.Once
	watcher *fsnotify.Watcher

	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{} // by folder
}

// follow returns a channel that receives (without blocking the watch: it
// holds one pending tick) when dir changes, and the function that ends
// the following; a nil channel when there is no watch.
func (s *spoolWatch) follow(dir string) (<-chan struct{}, func()) {
	s.once.Do(s.start)
	if s.watcher == nil {
		return nil, func() {}
	}
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[dir] == nil {
		if err := s.watcher.Add(dir); err != nil {
			return nil, func() {}
		}
		s.subs[dir] = map[chan struct{}]struct{}{}
	}
	s.subs[dir][ch] = struct{}{}
	return ch, func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.subs[dir], ch)
		if len(s.subs[dir]) == 0 {
			delete(s.subs, dir)
			_ = s.watcher.Remove(dir)
		}
	}
}

// start opens the inotify instance and dispatches its events; a failure
// leaves the watch off (runs poll).
func (s *spoolWatch) start() {
	w, err := fsnotify.NewWatcher()
	if err != nil {
		return
	}
	s.watcher, s.subs = w, map[string]map[chan struct{}]struct{}{}
	go func() {
		for {
			select {
			case ev, ok := <-w.Events:
				if !ok {
					return
				}
				s.tell(ev.Name)
			case _, ok := <-w.Errors:
				if !ok {
					return
				}
			}
		}
	}()
}

// tell ticks the followers of the folder of path.
func (s *spoolWatch) tell(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for ch := range s.subs[filepath.Dir(path)] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
