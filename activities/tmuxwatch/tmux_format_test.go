package tmuxwatch

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// list-panes' fields are split on the unit separator as tmux 3.3 prints
// it, and on its octal escape as tmux 3.4 and later print every control
// character of a format's output.
func TestFieldsAreSplitAsEachTmuxPrintsTheSeparator(t *testing.T) {
	for _, out := range []string{
		"%0\x1f4474\x1f1796449918\n",
		`%0\0374474\0371796449918` + "\n",
	} {
		line := strings.TrimRight(out, "\n")
		assert.Equal(t, []string{"%0", "4474", "1796449918"}, strings.Split(line, fieldSeparator(out)), "%q", out)
	}
}
