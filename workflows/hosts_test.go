package workflows

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/mock"
	"github.com/stretchr/testify/require"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// grant is one HoldLease the lease workflow scheduled: to whom, and how.
type grant struct {
	instance string
	own      bool
	lease    time.Duration
	at       time.Duration // since the run began
}

// leaseWorld stands in for the processes around one host's lease, on the
// test environment's clock. Each grant (HoldLease, on an instance queue)
// is held for as long as holds says, in order (a holder that goes silent:
// the lease, then its heartbeat times out), else until the workflow
// cancels it; each adoption offer (AdoptHost) is answered by the adopter,
// if there is one.
type leaseWorld struct {
	env   *testsuite.TestWorkflowEnvironment
	start time.Time

	mu     sync.Mutex
	grants []grant
	// holds are how long the successive grants are held before their
	// heartbeat times out (0: until cancelled).
	holds []time.Duration
	// adopter answers adoption offers ("": nobody polls the adoption
	// queues), on the host's machine unless elsewhere.
	adopter     HostHolder
	elsewhere   bool
	adoptQueues []string
	cancelledAt map[string]time.Duration
	// holders are the instances of the grants by activity ID.
	holders map[string]string
}

// forever is how long a grant that is never lost is held.
const forever = 1000 * time.Hour

func newLeaseWorld(t *testing.T, holds ...time.Duration) *leaseWorld {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	w := &leaseWorld{env: env, start: env.Now(), holds: holds, cancelledAt: map[string]time.Duration{}, holders: map[string]string{}}
	env.RegisterWorkflowWithOptions(HostLease, workflow.RegisterOptions{Name: HostLeaseWorkflowName})
	env.RegisterWorkflowWithOptions(HostLease, workflow.RegisterOptions{Name: LegacyHostLeaseWorkflowName})
	env.RegisterActivityWithOptions(func(context.Context, HoldLeaseInput) error { panic("mocked") },
		activity.RegisterOptions{Name: HoldLeaseActivityName})
	env.RegisterActivityWithOptions(func(context.Context, AdoptHostInput) (HostHolder, error) { panic("mocked") },
		activity.RegisterOptions{Name: AdoptHostActivityName})
	instanceOf := func(queue string) string {
		return strings.TrimPrefix(queue, InstanceQueue("default-test-taskqueue", ""))
	}
	env.SetOnActivityStartedListener(func(info *activity.Info, _ context.Context, args converter.EncodedValues) {
		w.mu.Lock()
		defer w.mu.Unlock()
		switch info.ActivityType.Name {
		case HoldLeaseActivityName:
			var in HoldLeaseInput
			require.NoError(t, args.Get(&in))
			w.grants = append(w.grants, grant{instance: instanceOf(info.TaskQueue), own: in.Own, lease: info.HeartbeatTimeout, at: env.Now().Sub(w.start)})
			w.holders[info.ActivityID] = instanceOf(info.TaskQueue)
		case AdoptHostActivityName:
			w.adoptQueues = append(w.adoptQueues, info.TaskQueue)
		}
	})
	env.SetOnActivityCanceledListener(func(info *activity.Info) {
		if info.ActivityType.Name == HoldLeaseActivityName {
			w.mu.Lock()
			w.cancelledAt[w.holders[info.ActivityID]] = env.Now().Sub(w.start)
			w.mu.Unlock()
		}
	})
	next := 0
	env.OnActivity(HoldLeaseActivityName, mock.Anything, mock.Anything).
		AfterFn(func() time.Duration {
			w.mu.Lock()
			defer w.mu.Unlock()
			d := forever
			if next < len(w.holds) && w.holds[next] > 0 {
				d = w.holds[next]
			}
			next++
			return d
		}).
		Return(temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_HEARTBEAT, nil))
	env.OnActivity(AdoptHostActivityName, mock.Anything, mock.Anything).
		AfterFn(func() time.Duration {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.adopter.Instance == "" {
				return forever // nobody polls the adoption queue
			}
			return 0
		}).
		Return(func(ctx context.Context, _ AdoptHostInput) (HostHolder, error) {
			w.mu.Lock()
			defer w.mu.Unlock()
			if w.elsewhere && activity.GetInfo(ctx).TaskQueue == AdoptQueue("default-test-taskqueue", "m1") {
				// Nobody on the host's machine took it within its
				// schedule-to-start timeout.
				return HostHolder{}, temporal.NewTimeoutError(enumspb.TIMEOUT_TYPE_SCHEDULE_TO_START, nil)
			}
			return w.adopter, nil
		})
	return w
}

func (w *leaseWorld) online(at time.Duration, instance string) {
	w.env.RegisterDelayedCallback(func() {
		w.env.SignalWorkflow(HostOnlineSignal, HostOnline{Instance: instance, Machine: "m1", Lease: 6 * time.Second})
	}, at)
}

func (w *leaseWorld) granted() []grant {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]grant(nil), w.grants...)
}

var leaseInput = HostLeaseInput{TaskQueue: "default-test-taskqueue", Host: "h1", Machine: "m1", Lease: 6 * time.Second}

// The host's own process, online, holds its lease: a HoldLease on its
// instance queue whose heartbeat timeout is the lease.
func TestAnOnlineHostHoldsItsOwnLease(t *testing.T) {
	w := newLeaseWorld(t)
	w.online(0, "h1-a") // the process starts the workflow with the signal
	w.env.RegisterDelayedCallback(w.env.CancelWorkflow, time.Hour)
	w.env.ExecuteWorkflow(HostLeaseWorkflowName, leaseInput)

	grants := w.granted()
	require.Len(t, grants, 1)
	assert.Equal(t, grant{instance: "h1-a", own: true, lease: 6 * time.Second}, grants[0])
	assert.Empty(t, w.adoptQueues, "no adoption while the owner holds it")
}

// A holder that goes silent for the lease loses it: the lease is offered
// to the workers on its machine, and the adopter holds it.
func TestALapsedLeaseIsAdoptedOnItsMachine(t *testing.T) {
	w := newLeaseWorld(t, 6*time.Second)
	w.adopter = HostHolder{Instance: "h2-x", Host: "h2"}
	w.online(0, "h1-a")
	w.env.RegisterDelayedCallback(w.env.CancelWorkflow, time.Hour)
	w.env.ExecuteWorkflow(HostLeaseWorkflowName, leaseInput)

	grants := w.granted()
	require.Len(t, grants, 2)
	assert.Equal(t, "h1-a", grants[0].instance)
	assert.Equal(t, grant{instance: "h2-x", own: false, lease: 6 * time.Second}, grant{instance: grants[1].instance, own: grants[1].own, lease: grants[1].lease})
	assert.Equal(t, []string{AdoptQueue("default-test-taskqueue", "m1")}, w.adoptQueues)
}

// With no worker on its machine to take it, a lapsed lease is offered to
// any worker.
func TestALapsedLeaseNobodyOnItsMachineTakesGoesToAnyWorker(t *testing.T) {
	w := newLeaseWorld(t, 6*time.Second)
	w.adopter = HostHolder{Instance: "h3-y", Host: "h3"}
	w.elsewhere = true
	w.online(0, "h1-a")
	w.env.RegisterDelayedCallback(w.env.CancelWorkflow, time.Hour)
	w.env.ExecuteWorkflow(HostLeaseWorkflowName, leaseInput)

	grants := w.granted()
	require.Len(t, grants, 2)
	assert.Equal(t, "h3-y", grants[1].instance)
	assert.Equal(t, []string{AdoptQueue("default-test-taskqueue", "m1"), AdoptQueue("default-test-taskqueue", AnyMachine)}, w.adoptQueues)
}

// When the host's own process comes back while an adopter holds the
// lease, the adopter is asked to release it (and is waited for), then the
// owner holds it.
func TestTheOwnerTakesItsHostBackFromTheAdopter(t *testing.T) {
	w := newLeaseWorld(t, 6*time.Second)
	w.adopter = HostHolder{Instance: "h2-x", Host: "h2"}
	w.online(0, "h1-a")
	w.online(time.Minute, "h1-b")
	w.env.RegisterDelayedCallback(w.env.CancelWorkflow, time.Hour)
	w.env.ExecuteWorkflow(HostLeaseWorkflowName, leaseInput)

	grants := w.granted()
	require.Len(t, grants, 3)
	assert.Equal(t, []string{"h1-a", "h2-x", "h1-b"}, []string{grants[0].instance, grants[1].instance, grants[2].instance})
	assert.True(t, grants[2].own)
	assert.Equal(t, time.Minute, w.cancelledAt["h2-x"], "the adopter was asked to release it when the owner came back")
	assert.Equal(t, time.Minute, grants[2].at, "then the owner holds it")
}

// A new process of the host (a restart after kill -9) gets the lease at
// once, although the old process's grant has not lapsed yet: one process
// runs a host, so the old one is gone.
func TestARestartedOwnerGetsItsLeaseAtOnce(t *testing.T) {
	w := newLeaseWorld(t)
	w.online(0, "h1-a")
	w.online(2*time.Second, "h1-b")
	w.online(3*time.Second, "h1-b") // said again while its grant is under way: no new grant
	w.env.RegisterDelayedCallback(w.env.CancelWorkflow, time.Hour)
	w.env.ExecuteWorkflow(HostLeaseWorkflowName, leaseInput)

	grants := w.granted()
	require.Len(t, grants, 2)
	assert.Equal(t, "h1-b", grants[1].instance)
	assert.Equal(t, 2*time.Second, grants[1].at, "no wait for the old grant to lapse")
}

// With nobody to adopt it, a lapsed lease waits for its owner, who gets it
// back the moment it is online.
func TestALapsedLeaseWithNoAdopterWaitsForItsOwner(t *testing.T) {
	w := newLeaseWorld(t, 6*time.Second)
	w.online(0, "h1-a")
	w.online(10*time.Minute, "h1-b")
	w.env.RegisterDelayedCallback(w.env.CancelWorkflow, time.Hour)
	w.env.ExecuteWorkflow(HostLeaseWorkflowName, leaseInput)

	grants := w.granted()
	require.Len(t, grants, 2)
	assert.Equal(t, grant{instance: "h1-b", own: true, lease: 6 * time.Second, at: 10 * time.Minute}, grants[1])
	assert.NotEmpty(t, w.adoptQueues, "offered for adoption until the owner came back")
}

// The workflow continues as new when its history grows long, at a change
// of holder, with the new holder in its input. A lease of an earlier
// release's type continues under the internal type.
func TestTheLeaseContinuesAsNewWithItsHolder(t *testing.T) {
	for _, name := range []string{HostLeaseWorkflowName, LegacyHostLeaseWorkflowName} {
		t.Run(name, func(t *testing.T) { leaseContinuesAsNew(t, name) })
	}
}

func leaseContinuesAsNew(t *testing.T, name string) {
	w := newLeaseWorld(t)
	for i := range 150 {
		w.online(time.Duration(i+1)*time.Second, fmt.Sprint("h1-", i))
	}
	w.env.ExecuteWorkflow(name, leaseInput)

	require.True(t, w.env.IsWorkflowCompleted())
	err := w.env.GetWorkflowError()
	var cont *workflow.ContinueAsNewError
	require.ErrorAs(t, err, &cont)
	assert.Equal(t, InternalTypePrefix+"HostLease", cont.WorkflowType.Name)
	var next HostLeaseInput
	require.NoError(t, converter.GetDefaultDataConverter().FromPayloads(cont.Input, &next))
	require.NotNil(t, next.Holder)
	assert.Equal(t, "h1", next.Holder.Host)
	assert.Equal(t, "m1", next.Machine)
}
