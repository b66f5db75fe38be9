package tmuxwatch

import "bytes"

// Cleaner turns a pane's raw output stream into its text: terminal control
// sequences (CSI, OSC, DCS and other escapes), carriage returns and other
// control characters are dropped; newlines and tabs stay. It keeps its
// state between chunks, so a sequence split across two writes is still
// removed.
type Cleaner struct {
	state cleanState
}

type cleanState int

const (
	ground cleanState = iota
	escape
	escapeIntermediate // ESC ( B and the like: one more byte
	csi
	controlString    // OSC, DCS, APC, PM, SOS: up to BEL or ST
	controlStringEsc // ESC inside a control string: maybe ST
)

// Clean returns the text in chunk.
func (c *Cleaner) Clean(chunk []byte) []byte {
	out := make([]byte, 0, len(chunk))
	for _, b := range chunk {
		switch c.state {
		case ground:
			switch {
			case b == 0x1b:
				c.state = escape
			case b == '\n' || b == '\t':
				out = append(out, b)
			case b < 0x20 || b == 0x7f:
				// \r, BEL, BS and other controls are not text.
			default:
				out = append(out, b)
			}
		case escape:
			switch {
			case b == '[':
				c.state = csi
			case b == ']' || b == 'P' || b == '_' || b == '^' || b == 'X':
				c.state = controlString
			case b >= 0x20 && b <= 0x2f:
				c.state = escapeIntermediate
			default:
				c.state = ground
			}
		case escapeIntermediate:
			c.state = ground
		case csi:
			if b >= 0x40 && b <= 0x7e {
				c.state = ground
			}
		case controlString:
			switch b {
			case 0x07:
				c.state = ground
			case 0x1b:
				c.state = controlStringEsc
			}
		case controlStringEsc:
			if b == '\\' {
				c.state = ground
			} else {
				c.state = controlString
			}
		}
	}
	return out
}

// Finder looks for a literal text in a stream of chunks, across chunk
// boundaries.
type Finder struct {
	text []byte
	tail []byte
}

// NewFinder looks for text.
func NewFinder(text string) *Finder { return &Finder{text: []byte(text)} }

// Feed adds chunk and reports whether the text has appeared.
func (f *Finder) Feed(chunk []byte) bool {
	buf := append(f.tail, chunk...)
	if bytes.Contains(buf, f.text) {
		return true
	}
	keep := len(f.text) - 1
	if len(buf) > keep {
		buf = buf[len(buf)-keep:]
	}
	f.tail = append(f.tail[:0:0], buf...)
	return false
}
