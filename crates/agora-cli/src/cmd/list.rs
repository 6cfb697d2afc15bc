//! `agora list`: methods, problems and suites.

/// Print the registry of methods, the problems and the suites.
pub fn run() {
    println!("methods:  {}", agora_methods::method_names().join(", "));
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
