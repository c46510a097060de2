package main

import (
	"strings"

	"github.com/dave/jennifer/jen"
	"github.com/redlockgo/redlock/spec"
)

// client is what differs between the client libraries: how an argument is
// passed, and the four helpers every operation method calls. Everything
// else in an adapter is rendered the same for all clients.
type client struct {
	pkg        string // the package under drivers/, and its name
	stringArgs bool   // the client takes arguments as strings only
	// helpers renders evalInt, evalInts, evalStrings, doInt and doOK: run
	// a script (EVALSHA, then EVAL on NOSCRIPT) or a native command, decode
	// integers or strings.
	helpers func(f *jen.File)
}

var clients = []client{goredis, redigo, rueidis}

// adapter renders one client's zz_generated.go: one method per operation.
func adapter(c client, ops []spec.Op) *jen.File {
	f := newFile(module+"/drivers/"+c.pkg, c.pkg)
	f.ImportName(goredisPkg, "redis")
	f.ImportName(redigoPkg, "redis")
	f.Var().Id("_").Qual(driverPkg, "Driver").Op("=").Parens(jen.Op("*").Id("Driver")).Parens(jen.Nil())
	for _, op := range ops {
		add(f, scriptMethod(c, op))
		for _, n := range op.Natives {
			add(f, nativeMethod(c, op, n))
		}
	}
	c.helpers(f)
	return f
}

func method(op spec.Op, name string, body jen.Code) jen.Code {
	return jen.Func().Params(jen.Id("d").Op("*").Id("Driver")).Id(name).Add(signature(op)).Block(jen.Return(body))
}

func scriptMethod(c client, op spec.Op) jen.Code {
	helper := "evalInt"
	switch {
	case textReply(op):
		helper = "evalStrings"
	case len(op.Reply) > 1:
		helper = "evalInts"
	}
	call := jen.Id("d").Dot(helper).CallFunc(func(g *jen.Group) {
		g.Id("ctx")
		g.Qual(adapterPkg, op.Name+"Script")
		g.Add(keys(op))
		for _, p := range op.Args {
			g.Add(c.arg(ref(op, p), p.Type))
		}
	})
	return jen.Commentf("%s runs scripts/lua/%s.lua.", op.Name, op.Script).Line().
		Add(method(op, op.Name, jen.Qual(adapterPkg, "Decode"+op.Name).Call(call)))
}

// keys renders the KEYS of a script call: the key parameters in a
// []string, and a Strings key (always the last) appended to them.
func keys(op spec.Op) jen.Code {
	var fixed []jen.Code
	for _, p := range op.Keys {
		if p.Type == spec.Strings {
			if len(fixed) == 0 {
				return ref(op, p)
			}
			return jen.Append(jen.Index().String().Values(fixed...), ref(op, p).Op("..."))
		}
		fixed = append(fixed, ref(op, p))
	}
	return jen.Index().String().Values(fixed...)
}

// nativeMethod renders a native command: its first word is the command,
// then the keys (the spec test checks they come first), then the rest.
func nativeMethod(c client, op spec.Op, n spec.Native) jen.Code {
	helper := "doInt"
	if n.Reply == spec.OKReply {
		helper = "doOK"
	}
	isKey := map[string]bool{}
	for _, p := range op.Keys {
		isKey[p.Name] = true
	}
	byName := map[string]spec.Param{}
	for _, p := range params(op) {
		byName[p.Name] = p
	}
	var keys, args []jen.Code
	for _, w := range n.Command[1:] {
		name, named := strings.CutPrefix(w, "$")
		switch {
		case named && isKey[name]:
			keys = append(keys, ref(op, byName[name]))
		case named:
			args = append(args, c.arg(ref(op, byName[name]), byName[name].Type))
		default:
			args = append(args, jen.Lit(w))
		}
	}
	call := jen.Id("d").Dot(helper).Call(append([]jen.Code{jen.Id("ctx"), jen.Lit(n.Command[0]), jen.Index().String().Values(keys...)}, args...)...)
	return jen.Commentf("%s runs %s (%s).", op.Name+n.Name, strings.Join(n.Command, " "), n.Server).Line().
		Add(method(op, op.Name+n.Name, jen.Qual(adapterPkg, "Decode"+op.Name).Call(call)))
}

// arg converts a parameter to what the client sends.
func (c client) arg(v *jen.Statement, t spec.Type) jen.Code {
	if t == spec.Millis {
		v = v.Dot("Milliseconds").Call()
	}
	if c.stringArgs && t != spec.String {
		return jen.Qual("strconv", "FormatInt").Call(v, jen.Lit(10))
	}
	return v
}
