package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func teapot() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) })
}

// serveAsync serves one request on route in the background and returns
// its recorder once done is closed.
func serveAsync(route *startingRoute, req *http.Request) (*httptest.ResponseRecorder, <-chan struct{}) {
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		route.ServeHTTP(rec, req)
	}()
	return rec, done
}

func TestAStartingRouteServesARequestThatArrivedBeforeItsHandler(t *testing.T) {
	var route startingRoute
	rec, done := serveAsync(&route, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	select {
	case <-done:
		t.Fatalf("the request was answered %d before the handler was set", rec.Code)
	case <-time.After(50 * time.Millisecond):
	}
	route.set(teapot())
	<-done
	assert.Equal(t, http.StatusTeapot, rec.Code)

	rec = httptest.NewRecorder()
	route.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	assert.Equal(t, http.StatusTeapot, rec.Code)
}

func TestAStartingRouteAnswers503AfterItsHold(t *testing.T) {
	route := startingRoute{hold: time.Millisecond}
	rec := httptest.NewRecorder()
	route.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Equal(t, "1", rec.Header().Get("Retry-After"))
	assert.Contains(t, rec.Body.String(), "durawait is starting")
}

func TestAnAbandonedStartingRouteAnswers503AtOnce(t *testing.T) {
	route := startingRoute{hold: time.Hour}
	rec, done := serveAsync(&route, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	route.abandon()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting request was not answered when the start was given up")
	}
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)

	// Later requests too, until a handler is set.
	rec = httptest.NewRecorder()
	route.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	route.set(teapot())
	rec = httptest.NewRecorder()
	route.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/mcp", nil))
	assert.Equal(t, http.StatusTeapot, rec.Code)
}

func TestAStartingRouteLetsACancelledRequestGo(t *testing.T) {
	route := startingRoute{hold: time.Hour}
	ctx, cancel := context.WithCancel(context.Background())
	rec, done := serveAsync(&route, httptest.NewRequestWithContext(ctx, http.MethodGet, "/events", nil))
	cancel()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled request was still held")
	}
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
}

func TestTheStartingHoldIsAtMostHalfTheReadTimeout(t *testing.T) {
	for _, tc := range []struct {
		readTimeout, hold time.Duration
	}{
		{30 * time.Second, 15 * time.Second}, // the default read timeout
		{time.Minute, 15 * time.Second},      // the documented most (docs/clients.md)
		{10 * time.Second, 5 * time.Second},
		{time.Second, 500 * time.Millisecond},
	} {
		assert.Equal(t, tc.hold, startingHoldWithin(tc.readTimeout), "read timeout %s", tc.readTimeout)
	}
}
