fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let exps = agora_experiments::hpbo::experiments(false);
    let e = exps.iter().find(|e| e.name == a[0]).unwrap();
    let m = e.methods.iter().find(|m| m.label == a[1]).unwrap();
    let s: u64 = a[3].parse().unwrap();
    match agora_experiments::hpbo::run_one(&e.name, m, &a[2], s, e.iters) {
        Ok(r) => println!("ok {}", r.last().unwrap().ra_cum_regret),
        Err(err) => println!("FAIL {err}"),
    }
}
