package main

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"
	"github.com/redlockgo/redlock/scripts/lua"
	"github.com/redlockgo/redlock/spec"
)

const (
	driverPkg  = module + "/driver"
	adapterPkg = module + "/driver/adapter"
	luaPkg     = module + "/scripts/lua"
)

// contract renders package driver's generated part: the Scripts interface,
// the reply types, and the list of native commands with their probe.
func contract(ops []spec.Op) *jen.File {
	f := newFile(driverPkg, "driver")
	f.Comment("Scripts is the generated part of Driver: one method per operation of package")
	f.Comment("spec. A method runs its script with EVALSHA, falls back to EVAL on NOSCRIPT,")
	f.Comment("and decodes the reply; a method named after a native command runs that")
	f.Comment("command instead and returns what the script would.")
	f.Type().Id("Scripts").InterfaceFunc(func(g *jen.Group) {
		for _, op := range ops {
			g.Comment(op.Name + " " + op.Doc)
			g.Commentf("It runs scripts/lua/%s.lua.", op.Script)
			g.Id(op.Name).Add(signature(op))
			for _, n := range op.Natives {
				g.Commentf("%s is %s done by the native command %s (%s).", op.Name+n.Name, op.Name, n.Command[0], n.Server)
				g.Id(op.Name + n.Name).Add(signature(op))
			}
		}
	})
	for _, op := range ops {
		if usesRequest(op) {
			add(f, requestStruct(op))
		}
		if len(op.Reply) > 1 {
			add(f, replyStruct(op))
		}
	}
	add(f, natives(ops))
	add(f, probe(ops))
	return f
}

// scripts renders package adapter's generated part: the scripts with their
// SHA1s and the decoders of their replies, which the adapters use.
func scripts(ops []spec.Op) *jen.File {
	f := newFile(adapterPkg, "adapter")
	var list []jen.Code
	for _, op := range ops {
		add(f, scriptVar(op))
		add(f, decoder(op))
		list = append(list, jen.Op("&").Id(op.Name+"Script"))
	}
	add(f, jen.Comment("Scripts lists every script, in spec order, for a test that runs them").Line().
		Comment("changed (the conformance suite's check that a script opens only its KEYS).").Line().
		Var().Id("Scripts").Op("=").Index().Op("*").Id("Script").Values(list...))
	return f
}

// signature is an operation's parameter and result list. Keys and
// arguments become Go parameters in order, or the fields of a request
// struct where there are many (see usesRequest).
func signature(op spec.Op) *jen.Statement {
	return jen.ParamsFunc(func(g *jen.Group) {
		g.Id("ctx").Qual("context", "Context")
		if usesRequest(op) {
			g.Id("r").Qual(driverPkg, op.Name+"Request")
			return
		}
		for _, p := range params(op) {
			g.Id(p.Name).Add(goType(p.Type))
		}
	}).Params(replyType(op), jen.Error())
}

// requestMin is how many keys and arguments an operation has at least to
// take them in a struct, <Op>Request: a call with seven positional
// strings and numbers is hard to read and easy to get wrong.
const requestMin = 7

func usesRequest(op spec.Op) bool { return len(params(op)) >= requestMin }

// ref is how a method's body names parameter p of op: itself, or its
// request's field.
func ref(op spec.Op, p spec.Param) *jen.Statement {
	if usesRequest(op) {
		return jen.Id("r").Dot(fieldName(p.Name))
	}
	return jen.Id(p.Name)
}

// fieldName is a parameter's name as a request field.
func fieldName(param string) string {
	if param == "ttl" {
		return "TTL"
	}
	return strings.ToUpper(param[:1]) + param[1:]
}

// requestStruct renders <Op>Request: the keys, then the arguments, as the
// script's header lists them.
func requestStruct(op spec.Op) jen.Code {
	return jen.Commentf("%sRequest holds the keys and arguments of %s, in the order of scripts/lua/%s.lua.", op.Name, op.Name, op.Script).Line().
		Type().Id(op.Name + "Request").StructFunc(func(g *jen.Group) {
		for i, p := range op.Keys {
			g.Id(fieldName(p.Name)).Add(goType(p.Type)).Commentf("KEYS[%d]", i+1)
		}
		for i, p := range op.Args {
			g.Id(fieldName(p.Name)).Add(goType(p.Type)).Commentf("ARGV[%d]", i+1)
		}
	})
}

func params(op spec.Op) []spec.Param {
	return append(append([]spec.Param(nil), op.Keys...), op.Args...)
}

func goType(t spec.Type) jen.Code {
	switch t {
	case spec.Int:
		return jen.Int64()
	case spec.Bool:
		return jen.Bool()
	case spec.Millis:
		return jen.Qual("time", "Duration")
	case spec.Strings:
		return jen.Index().String()
	}
	return jen.String()
}

// replyType is the Go type an operation returns, qualified so that it reads
// the same inside package driver and in an adapter.
func replyType(op spec.Op) jen.Code {
	if len(op.Reply) == 1 {
		return goType(op.Reply[0].Type)
	}
	return jen.Qual(driverPkg, op.Name+"Reply")
}

func replyStruct(op spec.Op) jen.Code {
	return jen.Commentf("%sReply is the reply of scripts/lua/%s.lua.", op.Name, op.Script).Line().
		Type().Id(op.Name + "Reply").StructFunc(func(g *jen.Group) {
		for _, fld := range op.Reply {
			g.Id(fld.Name).Add(goType(fld.Type)).Comment(fld.Doc)
		}
	})
}

func scriptVar(op spec.Op) jen.Code {
	file := op.Script + ".lua"
	sum := sha1.Sum([]byte(lua.Source(file)))
	return jen.Commentf("%sScript is scripts/lua/%s.", op.Name, file).Line().
		Var().Id(op.Name + "Script").Op("=").Id("Script").Values(jen.Dict{
		jen.Id("Name"):    jen.Lit(op.Script),
		jen.Id("SHA1"):    jen.Lit(hex.EncodeToString(sum[:])),
		jen.Id("sha1Arg"): jen.Lit(hex.EncodeToString(sum[:])),
		jen.Id("Source"):  jen.Qual(luaPkg, "Source").Call(jen.Lit(file)),
	})
}

// decoder renders Decode<Op>, which turns the client's integer reply into
// the operation's Go reply. Adapters pass their (reply, error) straight in.
func decoder(op spec.Op) jen.Code {
	name := "Decode" + op.Name
	doc := jen.Commentf("%s turns the reply of %s.lua, or the error that came instead, into its Go form.", name, op.Script).Line()
	if len(op.Reply) == 1 {
		return doc.Func().Id(name).Params(jen.Id("v").Int64(), jen.Err().Error()).Params(replyType(op), jen.Error()).Block(
			jen.Return(field(op.Reply[0], jen.Id("v")), jen.Err()),
		)
	}
	zero := jen.Qual(driverPkg, op.Name+"Reply").Values()
	if textReply(op) {
		return doc.Add(textDecoder(op, name, zero))
	}
	return doc.Func().Id(name).Params(jen.Id("v").Index().Int64(), jen.Err().Error()).Params(replyType(op), jen.Error()).Block(
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(zero, jen.Err())),
		jen.If(jen.Len(jen.Id("v")).Op("!=").Lit(len(op.Reply))).Block(
			jen.Return(zero, jen.Id("replyLengthError").Call(jen.Id(op.Name+"Script"), jen.Lit(len(op.Reply)), jen.Len(jen.Id("v")))),
		),
		jen.Return(jen.Qual(driverPkg, op.Name+"Reply").Values(jen.DictFunc(func(d jen.Dict) {
			for i, fld := range op.Reply {
				d[jen.Id(fld.Name)] = field(fld, jen.Id("v").Index(jen.Lit(i)))
			}
		})), jen.Nil()),
	)
}

// textReply reports whether op's reply holds a String or Strings field: its
// script then replies with strings only, numbers in decimal.
func textReply(op spec.Op) bool {
	for _, fld := range op.Reply {
		if fld.Type == spec.String || fld.Type == spec.Strings {
			return true
		}
	}
	return false
}

// textDecoder renders the decoder of a reply of strings: the String fields
// pass through, a last Strings field takes the rest of the reply, and the
// others are parsed from decimal first.
func textDecoder(op spec.Op, name string, zero *jen.Statement) jen.Code {
	var numbers []jen.Code
	for i, fld := range op.Reply {
		if fld.Type != spec.String && fld.Type != spec.Strings {
			numbers = append(numbers, jen.Lit(i))
		}
	}
	fixed, wrongLength := len(op.Reply), jen.Len(jen.Id("v")).Op("!=").Lit(len(op.Reply))
	if op.Reply[fixed-1].Type == spec.Strings {
		fixed--
		wrongLength = jen.Len(jen.Id("v")).Op("<").Lit(fixed)
	}
	return jen.Func().Id(name).Params(jen.Id("v").Index().String(), jen.Err().Error()).Params(replyType(op), jen.Error()).Block(
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(zero.Clone(), jen.Err())),
		jen.If(wrongLength).Block(
			jen.Return(zero.Clone(), jen.Id("replyLengthError").Call(jen.Id(op.Name+"Script"), jen.Lit(fixed), jen.Len(jen.Id("v")))),
		),
		jen.List(jen.Id("n"), jen.Err()).Op(":=").Id("parseNumbers").Call(append([]jen.Code{jen.Id(op.Name + "Script"), jen.Id("v")}, numbers...)...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(zero.Clone(), jen.Err())),
		jen.Return(jen.Qual(driverPkg, op.Name+"Reply").Values(jen.DictFunc(func(d jen.Dict) {
			for i, fld := range op.Reply {
				switch fld.Type {
				case spec.String:
					d[jen.Id(fld.Name)] = jen.Id("v").Index(jen.Lit(i))
				case spec.Strings:
					d[jen.Id(fld.Name)] = jen.Id("v").Index(jen.Lit(i).Op(":"))
				default:
					d[jen.Id(fld.Name)] = field(fld, jen.Id("n").Index(jen.Lit(i)))
				}
			}
		})), jen.Nil()),
	)
}

// field converts one reply integer to its field's Go type.
func field(fld spec.Field, v *jen.Statement) jen.Code {
	switch fld.Type {
	case spec.Bool:
		return v.Op("==").Lit(1)
	case spec.Millis:
		return jen.Qual("time", "Duration").Call(v).Op("*").Qual("time", "Millisecond")
	}
	return v
}

func natives(ops []spec.Op) jen.Code {
	s := jen.Comment("Native names a server command that can stand in for a script; its value").Line().
		Comment("is the name of the Scripts method that runs it.").Line().
		Type().Id("Native").String().Line()
	var list []jen.Code
	s.Const().DefsFunc(func(g *jen.Group) {
		for _, op := range ops {
			for _, n := range op.Natives {
				name := "Native" + op.Name + n.Name
				g.Id(name).Id("Native").Op("=").Lit(op.Name + n.Name).Comment(fmt.Sprintf("%s, %s", n.Command[0], n.Server))
				list = append(list, jen.Id(name))
			}
		}
	})
	return s.Line().Comment("Natives lists every native command, in spec order.").Line().
		Var().Id("Natives").Op("=").Index().Id("Native").Values(list...)
}

// probe renders Probe, which runs a native command against a key that must
// not exist: a server that lacks the command answers with an error; one that
// has it answers without writing, because every native is conditional.
func probe(ops []spec.Op) jen.Code {
	return jen.Comment("Probe runs native n against key, which must not exist, and returns the").Line().
		Comment("server's error when it lacks the command. It writes nothing.").Line().
		Func().Id("Probe").Params(jen.Id("ctx").Qual("context", "Context"), jen.Id("d").Id("Scripts"), jen.Id("n").Id("Native"), jen.Id("key").String()).Error().Block(
		jen.Var().Err().Error(),
		jen.Switch(jen.Id("n")).BlockFunc(func(g *jen.Group) {
			for _, op := range ops {
				for _, n := range op.Natives {
					g.Case(jen.Id("Native" + op.Name + n.Name)).Block(
						jen.List(jen.Id("_"), jen.Err()).Op("=").Id("d").Dot(op.Name + n.Name).CallFunc(func(c *jen.Group) {
							c.Id("ctx")
							if usesRequest(op) {
								c.Id(op.Name + "Request").Values(jen.DictFunc(func(d jen.Dict) {
									for i, p := range params(op) {
										d[jen.Id(fieldName(p.Name))] = probeValue(p, i < len(op.Keys))
									}
								}))
								return
							}
							for i, p := range params(op) {
								c.Add(probeValue(p, i < len(op.Keys)))
							}
						}),
					)
				}
			}
			g.Default().Block(jen.Return(jen.Qual("fmt", "Errorf").Call(jen.Lit("%w: unknown native command %q"), jen.Id("ErrInvalid"), jen.Id("n"))))
		}),
		jen.Return(jen.Err()),
	)
}

func probeValue(p spec.Param, isKey bool) jen.Code {
	switch {
	case isKey:
		return jen.Id("key")
	case p.Type == spec.Millis:
		return jen.Qual("time", "Second")
	case p.Type == spec.Int:
		return jen.Lit(0)
	}
	return jen.Lit("redlock-probe")
}
