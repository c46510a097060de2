package main

import (
	"github.com/dave/jennifer/jen"
	"github.com/redlockgo/redlock/spec"
)

const faultsPkg = module + "/conformance/faults"

// faults renders conformance/faults/zz_generated.go: every method of
// driver.Scripts on the fault-injecting *Driver, each asking its hook what
// to do with the call (see conformance/faults) before it reaches the
// wrapped driver. Generating it keeps the wrapper complete: an operation
// added to the spec cannot slip past the faults.
func faults(ops []spec.Op) *jen.File {
	f := newFile(faultsPkg, "faults")
	f.Var().Id("_").Qual(driverPkg, "Scripts").Op("=").Parens(jen.Op("*").Id("Driver")).Parens(jen.Nil())
	f.Line()
	for _, op := range ops {
		add(f, faultMethod(op, op.Name))
		for _, n := range op.Natives {
			add(f, faultMethod(op, op.Name+n.Name))
		}
	}
	return f
}

// faultMethod renders one wrapped method: run asks the hook with the
// operation's name (the same for the script and its natives), the method's
// name, the call's keys and ticket ids, and runs the inner method when it
// should.
func faultMethod(op spec.Op, name string) jen.Code {
	inner := jen.Id("d").Dot("inner").Dot(name).CallFunc(func(g *jen.Group) {
		g.Id("ctx")
		if usesRequest(op) {
			g.Id("r")
			return
		}
		for _, p := range params(op) {
			g.Id(p.Name)
		}
	})
	fn := jen.Func().Params(jen.Id("ctx").Qual("context", "Context")).Params(replyType(op), jen.Error()).Block(jen.Return(inner))
	return jen.Commentf("%s asks the hook, then runs the inner driver's %s.", name, name).Line().
		Func().Params(jen.Id("d").Op("*").Id("Driver")).Id(name).Add(signature(op)).Block(
		jen.Return(jen.Id("run").Call(jen.Id("ctx"), jen.Id("d"), jen.Lit(op.Name), jen.Lit(name), keys(op), ticketArgs(op), fn)),
	)
}

// ticketArgs renders the ticket ids a call names, for the hook: its
// "ticket" and "mark" arguments, or the ids a MultiLock's "tickets"
// argument lists (see ticketIDs in conformance/faults).
func ticketArgs(op spec.Op) jen.Code {
	var ids []jen.Code
	for _, p := range op.Args {
		switch p.Name {
		case "ticket", "mark":
			ids = append(ids, ref(op, p))
		case "tickets":
			return jen.Id("ticketIDs").Call(keys(op), ref(op, p))
		}
	}
	if len(ids) == 0 {
		return jen.Nil()
	}
	return jen.Index().String().Values(ids...)
}
