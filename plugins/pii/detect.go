package main

import "bytes"

// Byte-level PII detection over JSON string contents as they sit in the
// document (still escaped). No regexp: the scan is linear, allocation-free
// and several times cheaper than a regexp engine in a wasm guest.

// Kind is a PII category.
type Kind uint8

// Kinds, also the bit positions of the enabled set.
const (
	KindEmail Kind = iota
	KindPhone
	KindCard
)

var kindNames = [...]string{"email", "phone", "card"}
var kindTokens = [...]string{"[REDACTED_EMAIL]", "[REDACTED_PHONE]", "[REDACTED_CARD]"}

// String is the config name of the kind.
func (k Kind) String() string { return kindNames[k] }

// span is a detected PII occurrence [start,end) in the scanned slice.
type span struct {
	start, end int
	kind       Kind
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }
func isAlpha(c byte) bool { return c|0x20 >= 'a' && c|0x20 <= 'z' }
func isAlnum(c byte) bool { return isDigit(c) || isAlpha(c) }

func isLocalChar(c byte) bool {
	return isAlnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func isDomainChar(c byte) bool { return isAlnum(c) || c == '.' || c == '-' }

// escaped reports whether s[i] is the letter of a backslash escape such as
// \n: it must not be glued to a neighbouring token.
func escaped(s []byte, i int) bool {
	return i >= 1 && s[i-1] == '\\' && (i < 2 || s[i-2] != '\\')
}

// detector holds the enabled kinds and a reusable span buffer.
type detector struct {
	enabled [3]bool
	spans   []span
}

// scan appends the PII spans of s (sorted, non-overlapping) to d.spans,
// offsetting them by base, and returns how many it added.
func (d *detector) scan(s []byte, base int) int {
	first := len(d.spans)
	if d.enabled[KindEmail] {
		d.scanEmails(s, base)
	}
	emails := len(d.spans)
	if d.enabled[KindPhone] || d.enabled[KindCard] {
		d.scanNumbers(s, base, first, emails)
	}
	if len(d.spans)-emails > 0 && emails-first > 0 {
		sortSpans(d.spans[first:])
	}
	return len(d.spans) - first
}

func (d *detector) scanEmails(s []byte, base int) {
	minStart := 0
	for i := 0; i < len(s); i++ {
		// IndexByte is assembly even in wasm: most text has no '@'.
		j := bytes.IndexByte(s[i:], '@')
		if j < 0 {
			return
		}
		i += j
		l := i
		for l > minStart && isLocalChar(s[l-1]) && !escaped(s, l-1) {
			l--
		}
		for l < i && (s[l] == '.' || s[l] == '-') {
			l++
		}
		if l == i {
			continue
		}
		r := i + 1
		lastDot := -1
		for r < len(s) && isDomainChar(s[r]) {
			if s[r] == '.' {
				lastDot = r
			}
			r++
		}
		for r > i+1 && (s[r-1] == '.' || s[r-1] == '-') {
			r--
		}
		for lastDot >= r {
			lastDot = lastIndexDot(s, i+1, lastDot)
		}
		if lastDot >= r-1 || lastDot <= i+1 {
			continue
		}
		tld := 0
		for k := lastDot + 1; k < r; k++ {
			if !isAlpha(s[k]) {
				tld = 0
				break
			}
			tld++
		}
		if tld < 2 {
			continue
		}
		d.spans = append(d.spans, span{base + l, base + r, KindEmail})
		minStart = r
		i = r - 1
	}
}

// numStart marks bytes that can start a phone or card number; a table
// lookup is the cheapest per-byte test in a wasm guest.
var numStart = func() (t [256]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	t['+'], t['('] = true, true
	return t
}()

func isNumSep(c byte) bool { return c == ' ' || c == '-' || c == '.' || c == '(' || c == ')' }

// scanNumbers finds phone and card numbers, skipping email spans
// d.spans[emailFrom:emailTo].
func (d *detector) scanNumbers(s []byte, base, emailFrom, emailTo int) {
	e := emailFrom
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !numStart[c] {
			continue
		}
		for e < emailTo && d.spans[e].end-base <= i {
			e++
		}
		if e < emailTo && d.spans[e].start-base <= i {
			i = d.spans[e].end - base - 1
			continue
		}
		if i > 0 && isAlnum(s[i-1]) && !escaped(s, i-1) {
			// Inside a word or a longer number: skip to its end.
			for i < len(s) && isAlnum(s[i]) {
				i++
			}
			continue
		}
		j, digits, seps, dots, plus := i, 0, 0, 0, c == '+'
		lastDigit := i
		if plus {
			j++
		}
		sepRun, innerDots := 0, 0
		for j < len(s) {
			ch := s[j]
			if isDigit(ch) {
				innerDots = dots
				digits++
				sepRun = 0
				j++
				lastDigit = j
				continue
			}
			if isNumSep(ch) && sepRun < 2 {
				sepRun++
				seps++
				if ch == '.' {
					dots++
				}
				j++
				continue
			}
			break
		}
		end := lastDigit
		next := i + 1
		if digits > 0 {
			next = end
		}
		if digits == 0 || (end < len(s) && isAlnum(s[end])) || innerDots == 1 {
			i = next - 1
			continue
		}
		kind, ok := classifyNumber(s[i:end], digits, seps, plus)
		if ok && d.enabled[kind] {
			d.spans = append(d.spans, span{base + i, base + end, kind})
		}
		i = next - 1
	}
}

// classifyNumber: 13-19 digits passing Luhn with only space/dash
// separators is a card; 10-15 digits (7-15 with a leading +) is a phone.
func classifyNumber(b []byte, digits, seps int, plus bool) (Kind, bool) {
	if digits >= 13 && digits <= 19 && !plus && onlyCardSeps(b) && luhn(b) {
		return KindCard, true
	}
	if (digits >= 10 && digits <= 15) || (plus && digits >= 7 && digits <= 15) {
		return KindPhone, true
	}
	return 0, false
}

func onlyCardSeps(b []byte) bool {
	for _, c := range b {
		if !isDigit(c) && c != ' ' && c != '-' {
			return false
		}
	}
	return true
}

func luhn(b []byte) bool {
	sum, double := 0, false
	for i := len(b) - 1; i >= 0; i-- {
		c := b[i]
		if !isDigit(c) {
			continue
		}
		n := int(c - '0')
		if double {
			n *= 2
			if n > 9 {
				n -= 9
			}
		}
		sum += n
		double = !double
	}
	return sum%10 == 0
}

// sortSpans is an insertion sort: span lists are short and nearly sorted.
func sortSpans(s []span) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].start < s[j-1].start; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// lastIndexDot returns the last '.' in s[from:before], or -1.
func lastIndexDot(s []byte, from, before int) int {
	for k := before - 1; k >= from; k-- {
		if s[k] == '.' {
			return k
		}
	}
	return -1
}
