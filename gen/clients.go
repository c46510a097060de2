package main

import "github.com/dave/jennifer/jen"

const (
	goredisPkg = "github.com/redis/go-redis/v9"
	redigoPkg  = "github.com/gomodule/redigo/redis"
	rueidisPkg = "github.com/redis/rueidis"
)

// Shared pieces of the helper signatures.
var (
	ctxParam    = jen.Id("ctx").Qual("context", "Context")
	scriptParam = jen.Id("s").Qual(adapterPkg, "Script")
	keysParam   = jen.Id("keys").Index().String()
	nameParam   = jen.Id("name").String()
)

func recv() *jen.Statement { return jen.Func().Params(jen.Id("d").Op("*").Id("Driver")) }

// add appends a declaration and the blank line after it.
func add(f *jen.File, c jen.Code) {
	f.Add(c)
	f.Line()
}

// intHelpers renders evalInt, evalInts, evalStrings, doInt and doOK over a
// client's eval and do, given how the client turns a result into integers
// or strings.
func intHelpers(f *jen.File, argType jen.Code, asInt, asInts, asStrings func(*jen.Statement) jen.Code, okBody []jen.Code) {
	args := jen.Id("args").Op("...").Add(argType)
	evalCall := jen.Id("d").Dot("eval").Call(jen.Id("ctx"), jen.Id("s"), jen.Id("keys"), jen.Id("args"))
	doCall := jen.Id("d").Dot("do").Call(jen.Id("ctx"), jen.Id("name"), jen.Id("keys"), jen.Id("args"))
	add(f, recv().Id("evalInt").Params(ctxParam, scriptParam, keysParam, args).Params(jen.Int64(), jen.Error()).Block(jen.Return(asInt(evalCall.Clone()))))
	add(f, recv().Id("evalInts").Params(ctxParam, scriptParam, keysParam, args).Params(jen.Index().Int64(), jen.Error()).Block(jen.Return(asInts(evalCall.Clone()))))
	add(f, recv().Id("evalStrings").Params(ctxParam, scriptParam, keysParam, args).Params(jen.Index().String(), jen.Error()).Block(jen.Return(asStrings(evalCall.Clone()))))
	add(f, recv().Id("doInt").Params(ctxParam, nameParam, keysParam, args).Params(jen.Int64(), jen.Error()).Block(jen.Return(asInt(doCall.Clone()))))
	add(f, jen.Comment("doOK maps a conditional command's OK to 1 and its nil reply to 0.").Line().Add(recv()).Id("doOK").Params(ctxParam, nameParam, keysParam, args).Params(jen.Int64(), jen.Error()).Block(okBody...))
}

// okTail is the end of every doOK: an error is returned, anything else is 1.
func okTail(isNil jen.Code) []jen.Code {
	return []jen.Code{
		jen.If(isNil).Block(jen.Return(jen.Lit(0), jen.Nil())),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Lit(0), jen.Err())),
		jen.Return(jen.Lit(1), jen.Nil()),
	}
}

// words renders the list of a command's words for clients that take
// keys and arguments as one []any.
func words(head ...jen.Code) []jen.Code {
	size := jen.Len(jen.Id("keys")).Op("+").Len(jen.Id("args"))
	if len(head) > 0 {
		size = jen.Lit(len(head)).Op("+").Add(size)
	}
	w := jen.Make(jen.Index().Any(), jen.Lit(0), size)
	if len(head) > 0 {
		w = jen.Append(append([]jen.Code{w}, head...)...)
	}
	return []jen.Code{
		jen.Id("w").Op(":=").Add(w),
		jen.For(jen.List(jen.Id("_"), jen.Id("k")).Op(":=").Range().Id("keys")).Block(jen.Id("w").Op("=").Append(jen.Id("w"), jen.Id("k"))),
		jen.Id("w").Op("=").Append(jen.Id("w"), jen.Id("args").Op("...")),
	}
}

var goredis = client{pkg: "goredis", helpers: func(f *jen.File) {
	// send runs a command that go-redis must not send again (see once).
	add(f, recv().Id("send").Params(ctxParam, jen.Id("w").Op("...").Any()).Op("*").Qual(goredisPkg, "Cmd").Block(
		jen.Id("cmd").Op(":=").Qual(goredisPkg, "NewCmd").Call(jen.Id("ctx"), jen.Id("w").Op("...")),
		jen.Id("d").Dot("client").Dot("Process").Call(jen.Id("ctx"), jen.Id("once").Values(jen.Id("cmd"))),
		jen.Id("d").Dot("sent").Call(jen.Id("cmd").Dot("Err").Call()),
		jen.Return(jen.Id("cmd")),
	))
	add(f, recv().Id("eval").Params(ctxParam, scriptParam, keysParam, jen.Id("args").Index().Any()).Op("*").Qual(goredisPkg, "Cmd").BlockFunc(func(g *jen.Group) {
		for _, s := range words(jen.Lit("evalsha"), jen.Id("s").Dot("SHA1Arg").Call(), jen.Len(jen.Id("keys"))) {
			g.Add(s)
		}
		g.Id("cmd").Op(":=").Id("d").Dot("send").Call(jen.Id("ctx"), jen.Id("w").Op("..."))
		g.If(jen.Qual(adapterPkg, "IsNoScript").Call(jen.Id("cmd").Dot("Err").Call())).Block(
			jen.List(jen.Id("w").Index(jen.Lit(0)), jen.Id("w").Index(jen.Lit(1))).Op("=").List(jen.Lit("eval"), jen.Id("s").Dot("Source")),
			jen.Id("cmd").Op("=").Id("d").Dot("send").Call(jen.Id("ctx"), jen.Id("w").Op("...")),
		)
		g.Return(jen.Id("cmd"))
	}))
	add(f, recv().Id("do").Params(ctxParam, nameParam, keysParam, jen.Id("args").Index().Any()).Op("*").Qual(goredisPkg, "Cmd").BlockFunc(func(g *jen.Group) {
		for _, s := range words(jen.Id("name")) {
			g.Add(s)
		}
		g.Return(jen.Id("d").Dot("send").Call(jen.Id("ctx"), jen.Id("w").Op("...")))
	}))
	intHelpers(f, jen.Any(),
		func(s *jen.Statement) jen.Code { return s.Dot("Int64").Call() },
		func(s *jen.Statement) jen.Code { return s.Dot("Int64Slice").Call() },
		func(s *jen.Statement) jen.Code { return s.Dot("StringSlice").Call() },
		append([]jen.Code{jen.Err().Op(":=").Id("d").Dot("do").Call(jen.Id("ctx"), jen.Id("name"), jen.Id("keys"), jen.Id("args")).Dot("Err").Call()},
			okTail(jen.Qual("errors", "Is").Call(jen.Err(), jen.Qual(goredisPkg, "Nil")))...),
	)
}}

var redigo = client{pkg: "redigo", helpers: func(f *jen.File) {
	add(f, recv().Id("send").Params(ctxParam, nameParam, jen.Id("args").Op("...").Any()).Params(jen.Any(), jen.Error()).Block(
		jen.List(jen.Id("conn"), jen.Err()).Op(":=").Id("d").Dot("pool").Dot("GetContext").Call(jen.Id("ctx")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Err())),
		jen.Defer().Id("conn").Dot("Close").Call(),
		jen.Return(jen.Qual(redigoPkg, "DoContext").Call(jen.Id("conn"), jen.Id("ctx"), jen.Id("name"), jen.Id("args").Op("..."))),
	))
	add(f, recv().Id("eval").Params(ctxParam, scriptParam, keysParam, jen.Id("args").Index().Any()).Params(jen.Any(), jen.Error()).BlockFunc(func(g *jen.Group) {
		for _, s := range words(jen.Id("s").Dot("SHA1Arg").Call(), jen.Len(jen.Id("keys"))) {
			g.Add(s)
		}
		g.List(jen.Id("v"), jen.Err()).Op(":=").Id("d").Dot("send").Call(jen.Id("ctx"), jen.Lit("EVALSHA"), jen.Id("w").Op("..."))
		g.If(jen.Qual(adapterPkg, "IsNoScript").Call(jen.Err())).Block(
			jen.Id("w").Index(jen.Lit(0)).Op("=").Id("s").Dot("Source"),
			jen.List(jen.Id("v"), jen.Err()).Op("=").Id("d").Dot("send").Call(jen.Id("ctx"), jen.Lit("EVAL"), jen.Id("w").Op("...")),
		)
		g.Return(jen.Id("v"), jen.Err())
	}))
	add(f, recv().Id("do").Params(ctxParam, nameParam, keysParam, jen.Id("args").Index().Any()).Params(jen.Any(), jen.Error()).BlockFunc(func(g *jen.Group) {
		for _, s := range words() {
			g.Add(s)
		}
		g.Return(jen.Id("d").Dot("send").Call(jen.Id("ctx"), jen.Id("name"), jen.Id("w").Op("...")))
	}))
	intHelpers(f, jen.Any(),
		func(s *jen.Statement) jen.Code { return jen.Qual(redigoPkg, "Int64").Call(s) },
		func(s *jen.Statement) jen.Code { return jen.Qual(redigoPkg, "Int64s").Call(s) },
		func(s *jen.Statement) jen.Code { return jen.Qual(redigoPkg, "Strings").Call(s) },
		append([]jen.Code{jen.List(jen.Id("v"), jen.Err()).Op(":=").Id("d").Dot("do").Call(jen.Id("ctx"), jen.Id("name"), jen.Id("keys"), jen.Id("args"))},
			okTail(jen.Err().Op("==").Nil().Op("&&").Id("v").Op("==").Nil())...),
	)
}}

var rueidis = client{pkg: "rueidis", stringArgs: true, helpers: func(f *jen.File) {
	c := jen.Id("d").Dot("client")
	build := func(head *jen.Statement) *jen.Statement {
		return c.Clone().Dot("Do").Call(jen.Id("ctx"), head.Dot("Numkeys").Call(jen.Int64().Call(jen.Len(jen.Id("keys")))).
			Dot("Key").Call(jen.Id("keys").Op("...")).Dot("Arg").Call(jen.Id("args").Op("...")).Dot("Build").Call())
	}
	add(f, recv().Id("eval").Params(ctxParam, scriptParam, keysParam, jen.Id("args").Index().String()).Qual(rueidisPkg, "RedisResult").Block(
		jen.Id("r").Op(":=").Add(build(c.Clone().Dot("B").Call().Dot("Evalsha").Call().Dot("Sha1").Call(jen.Id("s").Dot("SHA1")))),
		jen.If(jen.Qual(adapterPkg, "IsNoScript").Call(jen.Id("r").Dot("Error").Call())).Block(
			jen.Id("r").Op("=").Add(build(c.Clone().Dot("B").Call().Dot("Eval").Call().Dot("Script").Call(jen.Id("s").Dot("Source")))),
		),
		jen.Return(jen.Id("r")),
	))
	add(f, recv().Id("do").Params(ctxParam, nameParam, keysParam, jen.Id("args").Index().String()).Qual(rueidisPkg, "RedisResult").Block(
		jen.Return(c.Clone().Dot("Do").Call(jen.Id("ctx"), c.Clone().Dot("B").Call().Dot("Arbitrary").Call(jen.Id("name")).
			Dot("Keys").Call(jen.Id("keys").Op("...")).Dot("Args").Call(jen.Id("args").Op("...")).Dot("Build").Call())),
	))
	intHelpers(f, jen.String(),
		func(s *jen.Statement) jen.Code { return s.Dot("AsInt64").Call() },
		func(s *jen.Statement) jen.Code { return s.Dot("AsIntSlice").Call() },
		func(s *jen.Statement) jen.Code { return s.Dot("AsStrSlice").Call() },
		append([]jen.Code{jen.Err().Op(":=").Id("d").Dot("do").Call(jen.Id("ctx"), jen.Id("name"), jen.Id("keys"), jen.Id("args")).Dot("Error").Call()},
			okTail(jen.Qual(rueidisPkg, "IsRedisNil").Call(jen.Err()))...),
	)
}}
