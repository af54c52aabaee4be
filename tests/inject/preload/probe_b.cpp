extern "C" int cco_probe() {
  return 2;
}
