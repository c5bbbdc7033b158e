package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// A topView shows the sampler's refreshes: as a table per refresh (plain)
// or as a screen that redraws in place and takes keys (screen).
type topView struct {
	std      *stdio
	s        *topSampler
	model    *topModel
	sortBy   string
	reverse  bool
	count    int // refreshes to show; 0: no limit
	rows     int // plain: rows a table; 0: all
	interval time.Duration
	notes    []string
	title    string // the server's address(es)
	pattern  string

	// The screen's state: the selected line (a place on the screen, as in
	// top(1): the lock under it changes with the order), and the row whose
	// detail is shown.
	cursor int
	detail *rowKey
	height int
	width  int
}

// step takes one refresh into the model.
func (v *topView) step(ctx context.Context) error {
	r, err := v.s.sample(ctx, time.Now())
	if err != nil {
		return err
	}
	v.model.update(r)
	v.s.forget(func(name string) bool {
		for k := range v.model.rows {
			if k.name == name {
				return true
			}
		}
		return false
	})
	return nil
}

// plain prints a table per refresh until ctx ends or count tables are out.
// The first table comes after two refreshes, since a rate needs both.
func (v *topView) plain(ctx context.Context) error {
	for _, n := range v.notes {
		fmt.Fprintln(v.std.out, "# "+n)
	}
	if err := v.step(ctx); err != nil {
		return quiet(ctx, err)
	}
	tick := time.NewTicker(v.interval)
	defer tick.Stop()
	for shown := 0; v.count == 0 || shown < v.count; shown++ {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
		if err := v.step(ctx); err != nil {
			return quiet(ctx, err)
		}
		rows := v.model.sorted(v.sortBy, v.reverse)
		if v.rows > 0 && len(rows) > v.rows {
			rows = rows[:v.rows]
		}
		fmt.Fprintln(v.std.out, v.headline(time.Now()))
		v.table(v.std.out, rows, -1)
		fmt.Fprintln(v.std.out)
	}
	return nil
}

// quiet returns nil for an error caused by ctx's end (Ctrl-C), err otherwise.
func quiet(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// headline is the line above a table: when, how many locks, in which order.
func (v *topView) headline(now time.Time) string {
	order := v.sortBy
	if v.reverse {
		order += ", reversed"
	}
	s := fmt.Sprintf("%s  %s  %d %s matching %q, by %s", now.Format("15:04:05"), v.title,
		len(v.model.rows), plural(int64(len(v.model.rows)), "lock", "locks"), v.pattern, order)
	if v.s.over > 0 {
		s += fmt.Sprintf("  (%d more names not followed: --max-names)", v.s.over)
	}
	return s
}

// table writes rows under topColumns' headings; the row at index mark (-1:
// none) is drawn in reverse video.
func (v *topView) table(w io.Writer, rows []*topRow, mark int) {
	var b bytes.Buffer
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, strings.Join(topColumns, "\t"))
	now := time.Now()
	for _, r := range rows {
		fmt.Fprintln(tw, strings.Join(r.cells(now, v.model.uncounted), "\t"))
	}
	_ = tw.Flush()
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, line := range lines {
		line = strings.TrimRight(line, " ")
		if mark >= 0 && i == mark+1 {
			line = "\x1b[7m" + padRight(line, v.width) + "\x1b[0m"
		}
		fmt.Fprintln(w, line)
	}
}

// padRight pads s with spaces to width characters (width 0: as it is).
func padRight(s string, width int) string {
	if n := utf8.RuneCountInString(s); n < width {
		return s + strings.Repeat(" ", width-n)
	}
	return s
}

// screen runs the full-screen view on the terminal out until q, Ctrl-C or
// count refreshes. Keys: arrows (or j, k) select a row, Enter shows its
// inspect detail and Esc (or Enter, Backspace) comes back, a letter of
// sortKeys orders the rows, r reverses the order.
func (v *topView) screen(ctx context.Context, out *os.File) error {
	keys := make(chan byte, 64)
	if in, ok := v.std.in.(*os.File); ok && isTTY(int(in.Fd())) {
		restore, err := makeRaw(int(in.Fd()))
		if err != nil {
			return fmt.Errorf("terminal: %w", err)
		}
		defer restore()
		// The reader is left blocked in Read when top ends: the process
		// ends with it.
		go readKeys(in, keys)
	}
	fmt.Fprint(out, "\x1b[?1049h\x1b[?25l") // the alternate screen, cursor hidden
	defer fmt.Fprint(out, "\x1b[?25h\x1b[?1049l")

	if err := v.step(ctx); err != nil {
		return quiet(ctx, err)
	}
	v.draw(ctx, out)
	tick := time.NewTicker(v.interval)
	defer tick.Stop()
	shown := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case k := <-keys:
			if !v.key(k, keys) {
				return nil
			}
		case <-tick.C:
			if err := v.step(ctx); err != nil {
				return quiet(ctx, err)
			}
			if shown++; v.count > 0 && shown >= v.count {
				return nil
			}
		}
		v.draw(ctx, out)
	}
}

// readKeys sends the bytes read from in, until it fails.
func readKeys(in *os.File, keys chan<- byte) {
	buf := make([]byte, 16)
	for {
		n, err := in.Read(buf)
		for _, b := range buf[:n] {
			keys <- b
		}
		if err != nil {
			close(keys)
			return
		}
	}
}

// Bytes of the keys the screen takes.
const (
	keyEsc       = 0x1b
	keyEnter     = '\r'
	keyLF        = '\n'
	keyBackspace = 0x7f
	keyCtrlC     = 0x03
)

// key handles one key (an arrow's escape sequence is read from more); it
// returns false to quit.
func (v *topView) key(k byte, more <-chan byte) bool {
	if k == keyEsc { // an arrow is ESC [ A (up) or ESC [ B (down); ESC alone is Esc
		select {
		case b := <-more:
			if b == '[' || b == 'O' {
				switch <-more {
				case 'A':
					v.move(-1)
				case 'B':
					v.move(1)
				}
				return true
			}
		case <-time.After(30 * time.Millisecond):
		}
		v.detail = nil
		return true
	}
	switch {
	case k == 'q' || k == keyCtrlC:
		return false
	case k == keyEnter || k == keyLF:
		if v.detail != nil {
			v.detail = nil
		} else if r := v.selectedRow(); r != nil {
			key := r.key
			v.detail = &key
		}
	case k == keyBackspace:
		v.detail = nil
	case k == 'j':
		v.move(1)
	case k == 'k':
		v.move(-1)
	case k == 'r':
		v.reverse = !v.reverse
	default:
		if name, ok := sortName(k); ok {
			v.sortBy = name
		}
	}
	return true
}

// move moves the selection by delta rows.
func (v *topView) move(delta int) {
	v.cursor = min(max(v.cursor+delta, 0), max(len(v.visible())-1, 0))
}

// visible returns the rows that fit on the screen, in order.
func (v *topView) visible() []*topRow {
	rows := v.model.sorted(v.sortBy, v.reverse)
	if room := v.height - topScreenHeader - len(v.notes); room >= 0 && len(rows) > room {
		rows = rows[:room]
	}
	return rows
}

// selectedRow returns the row under the cursor, or nil; a cursor below
// the last row (rows gone) moves up to it.
func (v *topView) selectedRow() *topRow {
	rows := v.visible()
	if len(rows) == 0 {
		return nil
	}
	v.cursor = min(v.cursor, len(rows)-1)
	return rows[v.cursor]
}

// topScreenHeader is the lines above the table on the screen: the
// headline, the keys' help, a blank line and the table's headings.
const topScreenHeader = 4

// draw redraws the screen: the table, or the selected row's detail.
func (v *topView) draw(ctx context.Context, out *os.File) {
	v.width, v.height = 100, 30
	if w, h, ok := terminalSize(int(out.Fd())); ok {
		v.width, v.height = w, h
	}
	var b bytes.Buffer
	now := time.Now()
	if v.detail != nil {
		fmt.Fprintf(&b, "%s  inspect %s (%s)   Esc: back  q: quit\n\n", now.Format("15:04:05"), v.detail.name, groupKind[v.detail.group])
		kind := ""
		if r := v.model.rows[*v.detail]; r != nil {
			kind = string(r.kind)
		}
		info, err := detect(ctx, v.s.rc, v.detail.name, kind)
		if err != nil {
			fmt.Fprintf(&b, "%v\n", err)
		} else {
			printInfo(&b, info)
		}
	} else {
		fmt.Fprintln(&b, v.headline(now))
		fmt.Fprintf(&b, "keys: %s sort (now %s)  r reverse  arrows select  Enter inspect  q quit\n", v.sortLetters(), v.sortBy)
		for _, n := range v.notes {
			fmt.Fprintln(&b, "# "+n)
		}
		fmt.Fprintln(&b)
		mark := -1
		if v.selectedRow() != nil {
			mark = v.cursor
		}
		v.table(&b, v.visible(), mark)
	}
	// Each line cut to the width and cleared to its end; the rest of the
	// screen cleared.
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	var screen strings.Builder
	screen.WriteString("\x1b[H") // the cursor home
	for i, line := range lines {
		if i >= v.height {
			break
		}
		if i > 0 {
			screen.WriteString("\r\n")
		}
		screen.WriteString(cut(line, v.width))
		screen.WriteString("\x1b[K")
	}
	screen.WriteString("\x1b[J")
	fmt.Fprint(out, screen.String())
}

// sortLetters lists the sort keys' letters.
func (v *topView) sortLetters() string {
	var b strings.Builder
	for i, s := range sortKeys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte(s.key)
	}
	return b.String()
}

// cut shortens line to width characters, not counting the control
// sequences in it (ESC [ ... and a final byte: reverse video, clearing),
// which are all kept.
func cut(line string, width int) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(line); {
		if line[i] == keyEsc && i+1 < len(line) && line[i+1] == '[' {
			j := i + 2
			for j < len(line) && (line[j] < 0x40 || line[j] > 0x7e) {
				j++
			}
			j = min(j+1, len(line))
			b.WriteString(line[i:j])
			i = j
			continue
		}
		r, size := utf8.DecodeRuneInString(line[i:])
		if n < width {
			b.WriteRune(r)
		}
		n++
		i += size
	}
	return b.String()
}
