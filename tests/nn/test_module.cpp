// tests/nn/test_module.cpp: Module and ModuleList (PyTorch's rules) with small test modules, so that
// the module system is checked independently of any layer.
#include <doctest/doctest.h>

#include <sstream>

#include <tapegrad/tapegrad.hpp>

#include "../helpers.hpp"

using namespace tapegrad;
using namespace tapegrad::nn;
using tapegrad::testing::all_close;

namespace {
// A leaf with one parameter, a persistent buffer and a non-persistent one.
struct Leaf : Module {
  explicit Leaf(float v = 1.f)
      : w(register_parameter("w", Parameter(Array{v, v}))),
        running(register_buffer("running", Buffer(Array{0.f}))),
        scratch(register_buffer("scratch", Buffer(Array{5.f}), /*persistent=*/false)) {}
  void extra_repr(std::ostream& os) const override { os << "size=2"; }
  Parameter w;
  Buffer running, scratch;
};

// Registration opened up, to test the name checks and late registration from outside.
struct Open : Module {
  using Module::register_buffer;
  using Module::register_module;
  using Module::register_parameter;
};

struct Pair : Module {
  Pair()
      : a(register_module("a", std::make_shared<Leaf>(1.f))),
        b(register_module("b", std::make_shared<Leaf>(2.f))) {}
  std::shared_ptr<Leaf> a, b;
};

// Registers a parameter it is given: with Tied, the same Parameter lives in two modules.
struct Holder : Module {
  explicit Holder(Parameter shared)
      : w(register_parameter("w", shared)), own(register_parameter("own", Parameter(Array{3.f}))) {}
  Parameter w, own;
};

struct Tied : Module {
  Tied() {
    first = register_module("first", std::make_shared<Leaf>());
    second = register_module("second", std::make_shared<Holder>(first->w));
  }
  std::shared_ptr<Leaf> first;
  std::shared_ptr<Holder> second;
};

template <class Pairs>
std::vector<std::string> names_of(const Pairs& pairs) {
  std::vector<std::string> out;
  for (const auto& [name, value] : pairs) out.push_back(name);
  return out;
}
using Names = std::vector<std::string>;
}  // namespace

TEST_SUITE("nn.module") {
  TEST_CASE("parameters, buffers and modules are listed in registration order with dotted names") {
    Pair m;
    CHECK(names_of(m.named_parameters()) == Names{"a.w", "b.w"});
    CHECK(names_of(m.named_buffers()) == Names{"a.running", "a.scratch", "b.running", "b.scratch"});
    CHECK(names_of(m.named_modules()) == Names{"", "a", "b"});
    CHECK(names_of(m.named_children()) == Names{"a", "b"});
    CHECK(m.named_modules()[0].second == &m);
    CHECK(m.parameters().size() == 2);
    CHECK(m.parameters()[1].is_same(m.b->w));
    CHECK(m.buffers().size() == 4);
    CHECK(m.named_parameters(/*recurse=*/false).empty());
    CHECK(names_of(m.a->named_parameters()) == Names{"w"});  // relative to the module asked
  }

  TEST_CASE("registration names each tensor and module with its path from the root") {
    Pair m;
    CHECK(m.path().empty());
    CHECK(m.a->path() == "a");
    CHECK(m.a->w.name() == "a.w");
    CHECK(m.b->running.name() == "b.running");
    CHECK(m.a->context() == "Leaf 'a'");
    CHECK(m.context() == "Pair");
  }

  TEST_CASE("a subtree built before its parent was registered gets its paths from the root") {
    auto inner = std::make_shared<Open>();
    auto leaf = inner->register_module("leaf", std::make_shared<Leaf>());
    CHECK(leaf->w.name() == "leaf.w");
    Open outer;
    outer.register_module("inner", inner);
    CHECK(inner->path() == "inner");
    CHECK(leaf->path() == "inner.leaf");
    CHECK(leaf->w.name() == "inner.leaf.w");
    CHECK(leaf->scratch.name() == "inner.leaf.scratch");
    // and a module added to a list that is already part of a model:
    auto layers = outer.register_module("layers", std::make_shared<ModuleList>());
    auto late = layers->push_back(std::make_shared<Leaf>());
    CHECK(late->path() == "layers.0");
    CHECK(late->w.name() == "layers.0.w");  // push_back returns the module with its own type
    CHECK(names_of(outer.named_parameters()) == Names{"inner.leaf.w", "layers.0.w"});
  }

  TEST_CASE("a tied parameter is listed once, under its first name") {
    Tied m;
    CHECK(names_of(m.named_parameters()) == Names{"first.w", "second.own"});
    CHECK(m.parameters().size() == 2);
    CHECK(m.first->w.is_same(m.second->w));
    CHECK(m.first->w.name() == "first.w");
    CHECK(names_of(m.second->named_parameters()) ==
          Names{"w", "own"});  // seen from the holder alone
  }

  TEST_CASE("a module shared by two parents is listed once, under its first path") {
    Open m;
    auto leaf = std::make_shared<Leaf>();
    m.register_module("x", leaf);
    m.register_module("y", leaf);
    CHECK(names_of(m.named_modules()) == Names{"", "x"});
    CHECK(names_of(m.named_children()) == Names{"x"});
    CHECK(names_of(m.named_parameters()) == Names{"x.w"});
    CHECK(leaf->path() == "x");
  }

  TEST_CASE("a module that outlives its parent can be registered elsewhere") {
    auto leaf = std::make_shared<Leaf>();
    {
      Open parent;
      parent.register_module("x", leaf);
      CHECK(leaf->w.name() == "x.w");
    }
    Open other;
    other.register_module("y", leaf);
    CHECK(leaf->path() == "y");
    CHECK(leaf->w.name() == "y.w");
  }

  TEST_CASE("unregister_module removes a child, which becomes a root, and frees its name") {
    Open m;
    auto a = m.register_module("a", std::make_shared<Leaf>(1.f));
    m.register_module("b", std::make_shared<Leaf>(2.f));
    m.unregister_module("a");
    CHECK(names_of(m.named_modules()) == Names{"", "b"});
    CHECK(names_of(m.named_parameters()) == Names{"b.w"});
    CHECK(a->path() == "");
    CHECK(a->w.name() == "w");
    m.register_module("a", std::make_shared<Leaf>(3.f));  // the name is free again
    CHECK(names_of(m.named_children()) == Names{"b", "a"});
    CHECK_THROWS_WITH_AS(m.unregister_module("c"),
                         doctest::Contains("No Module with name `c` is registered | "
                                           "Open.unregister_module: expected the name of a child, "
                                           "got 'c'; its children: 'b', 'a'"),
                         ValueError);
  }

  TEST_CASE("names are checked with PyTorch's texts") {
    Open m;
    m.register_parameter("w", Parameter(Array{1.f}));
    CHECK_THROWS_WITH_AS(m.register_parameter("", Parameter(Array{1.f})),
                         doctest::Contains("parameter name can't be empty string \"\""),
                         ValueError);
    CHECK_THROWS_WITH_AS(
        m.register_parameter("a.b", Parameter(Array{1.f})),
        doctest::Contains("parameter name can't contain \".\" | Open.register_parameter"),
        ValueError);
    CHECK_THROWS_WITH_AS(m.register_buffer("", Buffer(Array{1.f})),
                         doctest::Contains("buffer name can't be empty string \"\""), ValueError);
    CHECK_THROWS_WITH_AS(m.register_buffer("a.b", Buffer(Array{1.f})),
                         doctest::Contains("buffer name can't contain \".\""), ValueError);
    CHECK_THROWS_WITH_AS(m.register_module("", std::make_shared<Leaf>()),
                         doctest::Contains("module name can't be empty string \"\""), ValueError);
    CHECK_THROWS_WITH_AS(m.register_module("a.b", std::make_shared<Leaf>()),
                         doctest::Contains("module name can't contain \".\", got: a.b"),
                         ValueError);
    SUBCASE("a name already used, by any kind") {
      CHECK_THROWS_WITH_AS(m.register_parameter("w", Parameter(Array{1.f})),
                           doctest::Contains("attribute 'w' already exists"), ValueError);
      CHECK_THROWS_WITH_AS(m.register_buffer("w", Buffer(Array{1.f})),
                           doctest::Contains("attribute 'w' already exists"), ValueError);
      CHECK_THROWS_WITH_AS(m.register_module("w", std::make_shared<Leaf>()),
                           doctest::Contains("attribute 'w' already exists"), ValueError);
      m.register_module("child", std::make_shared<Leaf>());
      CHECK_THROWS_WITH_AS(m.register_parameter("child", Parameter(Array{1.f})),
                           doctest::Contains("attribute 'child' already exists"), ValueError);
    }
    SUBCASE("empty handles and cycles") {
      CHECK_THROWS_WITH_AS(m.register_parameter("p", Parameter()),
                           doctest::Contains("got an empty handle"), ValueError);
      CHECK_THROWS_WITH_AS(m.register_module("n", std::shared_ptr<Leaf>()),
                           doctest::Contains("got nullptr"), ValueError);
      auto child = std::make_shared<Open>();
      auto parent = std::make_shared<Open>();
      parent->register_module("child", child);
      CHECK_THROWS_WITH_AS(child->register_module("parent", parent),
                           doctest::Contains("would make a cycle"), ValueError);
    }
    CHECK(names_of(m.named_parameters()).front() == "w");  // a failed registration added nothing
  }

  TEST_CASE("train() and eval() reach every descendant and return the module") {
    Open m;
    auto inner = m.register_module("inner", std::make_shared<Pair>());
    CHECK(m.is_training());
    CHECK(&m.eval() == &m);
    CHECK_FALSE(m.is_training());
    CHECK_FALSE(inner->is_training());
    CHECK_FALSE(inner->a->is_training());
    CHECK_FALSE(inner->b->is_training());
    inner->train();  // a subtree only
    CHECK_FALSE(m.is_training());
    CHECK(inner->b->is_training());
    m.train(true);
    CHECK(inner->a->is_training());
  }

  TEST_CASE("apply visits the children's subtrees first, then the module itself") {
    Open m;
    auto inner = m.register_module("inner", std::make_shared<Pair>());
    m.register_module("last", std::make_shared<Leaf>());
    std::vector<std::string> order;
    Module& r = m.apply([&](Module& x) { order.push_back(x.path()); });
    CHECK(&r == &m);
    CHECK(order == Names{"inner.a", "inner.b", "inner", "last", ""});
  }

  TEST_CASE("requires_grad_ switches every parameter and leaves buffers alone") {
    Pair m;
    m.requires_grad_(false);
    for (const Parameter& p : m.parameters()) CHECK_FALSE(p.requires_grad());
    for (const Buffer& b : m.buffers()) CHECK_FALSE(b.requires_grad());
    m.requires_grad_();
    for (const Parameter& p : m.parameters()) CHECK(p.requires_grad());
    for (const Buffer& b : m.buffers()) CHECK_FALSE(b.requires_grad());
  }

  TEST_CASE("zero_grad drops gradients by default and zero-fills them with set_to_none=false") {
    Pair m;
    ops::sum(ops::add(ops::mul(m.a->w, m.b->w), m.a->w)).backward();
    CHECK(all_close(m.a->w.grad(), Array{3.f, 3.f}));
    m.zero_grad(/*set_to_none=*/false);
    CHECK(m.a->w.has_grad());
    CHECK(all_close(m.a->w.grad(), Array{0.f, 0.f}));
    m.zero_grad();
    CHECK_FALSE(m.a->w.has_grad());
    CHECK_FALSE(m.b->w.has_grad());
  }

  TEST_CASE("printing follows PyTorch's layout, nesting and ModuleList compression") {
    SUBCASE("a leaf prints on one line") {
      std::ostringstream os;
      os << Leaf();
      CHECK(os.str() == "Leaf(size=2)");
    }
    SUBCASE("a module with nothing to say prints empty parentheses") {
      CHECK(Open().repr() == "Open()");
      CHECK(ModuleList().repr() == "ModuleList()");
    }
    SUBCASE("a nested model") {
      Open m;
      auto layers = m.register_module("layers", std::make_shared<ModuleList>());
      layers->push_back(std::make_shared<Leaf>());
      layers->push_back(std::make_shared<Leaf>());
      layers->push_back(std::make_shared<Pair>());
      m.register_module("pair", std::make_shared<Pair>());
      std::ostringstream os;
      os << m;
      CHECK(os.str() ==
            "Open(\n"
            "  (layers): ModuleList(\n"
            "    (0-1): 2 x Leaf(size=2)\n"
            "    (2): Pair(\n"
            "      (a): Leaf(size=2)\n"
            "      (b): Leaf(size=2)\n"
            "    )\n"
            "  )\n"
            "  (pair): Pair(\n"
            "    (a): Leaf(size=2)\n"
            "    (b): Leaf(size=2)\n"
            "  )\n"
            ")");
    }
    SUBCASE("extra_repr and children together put everything on its own line") {
      struct Both : Module {
        Both() { register_module("leaf", std::make_shared<Leaf>()); }
        std::string type_name() const override { return "Both"; }
        void extra_repr(std::ostream& os) const override { os << "alpha=1\nbeta=2"; }
      };
      CHECK(Both().repr() == "Both(\n  alpha=1\n  beta=2\n  (leaf): Leaf(size=2)\n)");
    }
  }

  TEST_CASE("the default type name is the C++ class name without namespaces") {
    CHECK(Pair().type_name() == "Pair");
    CHECK(ModuleList().type_name() == "ModuleList");
  }
}  // TEST_SUITE

TEST_SUITE("nn.module_list") {
  TEST_CASE("push_back registers 0, 1, ... and the list can be indexed and iterated") {
    Open m;
    auto list = m.register_module("layers", std::make_shared<ModuleList>());
    auto l0 = list->push_back(std::make_shared<Leaf>(1.f));
    list->push_back(std::make_shared<Pair>());
    CHECK(list->size() == 2);
    CHECK(names_of(list->named_children()) == Names{"0", "1"});
    CHECK(names_of(m.named_parameters()) == Names{"layers.0.w", "layers.1.a.w", "layers.1.b.w"});
    CHECK(&(*list)[0] == l0.get());
    CHECK(&(*list)[-1] == list->ptr(1).get());
    CHECK(list->ptr<Pair>(1)->a->w.name() == "layers.1.a.w");
    std::size_t n = 0;
    for (const std::shared_ptr<Module>& layer : *list)
      CHECK(layer->path() == "layers." + std::to_string(n++));
    CHECK(n == 2);
  }

  TEST_CASE("a list can be built from a vector of modules") {
    ModuleList list({std::make_shared<Leaf>(), std::make_shared<Leaf>()});
    CHECK(names_of(list.named_parameters()) == Names{"0.w", "1.w"});
  }

  TEST_CASE("indexing outside the list and asking for the wrong type are errors") {
    ModuleList list({std::make_shared<Leaf>()});
    CHECK_THROWS_WITH_AS(
        list[1],
        doctest::Contains(
            "index 1 is out of range | ModuleList: expected an index in [-1, 1), got 1"),
        IndexError);
    CHECK_THROWS_WITH_AS(list.ptr(-2), doctest::Contains("index -2 is out of range"), IndexError);
    CHECK_THROWS_WITH_AS(list.ptr<Pair>(0), doctest::Contains("expected module 0 to be a"),
                         TypeError);
  }
}  // TEST_SUITE
