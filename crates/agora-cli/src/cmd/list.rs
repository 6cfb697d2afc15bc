//! `agora list`: the method registry (names, aliases, feedback, knobs), problems and suites.

/// Print the registry of methods, the problems and the suites.
pub fn run() {
    println!("methods (name [aliases]: feedback; description):");
    for m in agora_methods::registry::methods() {
        let aliases: Vec<&str> = m.aliases.iter().map(|a| a.name).collect();
        let feedback: Vec<&str> = m.feedback.iter().map(|f| f.name()).collect();
        let aliases = if aliases.is_empty() {
            String::new()
        } else {
            format!(" [{}]", aliases.join(", "))
        };
        println!(
            "  {}{aliases}: {}; {}",
            m.name,
            feedback.join(" + "),
            m.description
        );
        for k in m.knobs {
            let default = match k.default_text() {
                Some(d) => format!("= {d}"),
                None => format!("(required, e.g. {})", k.default_or_example()),
            };
            println!(
                "      {} {default}: {}; {}",
                k.name,
                k.kind.allowed(),
                k.doc
            );
        }
    }
    println!(
        "problems: {}",
        agora_problems::functions::names().join(", ")
    );
    println!("          (also ackley<d>, levy<d>, griewank<d>, rosenbrock<d>)");
    println!(
        "hpbo:     acquisitions anpei, rahbo, ei, ucb; inference hb, laplace, ep; problems {}",
        agora_problems::hpbo::HPBO_PROBLEMS.join(", ")
    );
    println!(
        "suites:   {}",
        agora_experiments::suites::suite_names().join(", ")
    );
}
