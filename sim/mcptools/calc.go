package mcptools

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// evaluate computes an arithmetic expression of numbers, + - * /, unary
// minus and parentheses, by recursive descent.
func evaluate(expr string) (float64, error) {
	p := &parser{s: strings.TrimSpace(expr)}
	if p.s == "" {
		return 0, errors.New("empty expression")
	}
	v, err := p.sum()
	if err != nil {
		return 0, err
	}
	p.space()
	if p.i < len(p.s) {
		return 0, fmt.Errorf("unexpected %q at %d", p.s[p.i:], p.i)
	}
	return v, nil
}

type parser struct {
	s     string
	i     int
	depth int
}

func (p *parser) space() {
	for p.i < len(p.s) && unicode.IsSpace(rune(p.s[p.i])) {
		p.i++
	}
}

func (p *parser) peek() byte {
	p.space()
	if p.i < len(p.s) {
		return p.s[p.i]
	}
	return 0
}

func (p *parser) sum() (float64, error) {
	v, err := p.product()
	for err == nil {
		switch p.peek() {
		case '+', '-':
			op := p.s[p.i]
			p.i++
			var r float64
			if r, err = p.product(); err == nil {
				if op == '+' {
					v += r
				} else {
					v -= r
				}
			}
		default:
			return v, nil
		}
	}
	return 0, err
}

func (p *parser) product() (float64, error) {
	v, err := p.unary()
	for err == nil {
		switch p.peek() {
		case '*', '/':
			op := p.s[p.i]
			p.i++
			var r float64
			if r, err = p.unary(); err == nil {
				if op == '*' {
					v *= r
				} else if r == 0 {
					return 0, errors.New("division by zero")
				} else {
					v /= r
				}
			}
		default:
			return v, nil
		}
	}
	return 0, err
}

func (p *parser) unary() (float64, error) {
	if p.depth > 100 {
		return 0, errors.New("expression nested too deeply")
	}
	switch p.peek() {
	case '-':
		p.i++
		p.depth++
		v, err := p.unary()
		p.depth--
		return -v, err
	case '(':
		p.i++
		p.depth++
		v, err := p.sum()
		p.depth--
		if err != nil {
			return 0, err
		}
		if p.peek() != ')' {
			return 0, errors.New("missing )")
		}
		p.i++
		return v, nil
	}
	start := p.i
	for p.i < len(p.s) && (p.s[p.i] >= '0' && p.s[p.i] <= '9' || p.s[p.i] == '.' || p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
	}
	if start == p.i {
		if p.i < len(p.s) {
			return 0, fmt.Errorf("unexpected %q at %d", p.s[p.i:p.i+1], p.i)
		}
		return 0, errors.New("expression ends early")
	}
	return strconv.ParseFloat(p.s[start:p.i], 64)
}
