

def stop_pause():
    pause_twice()  # time.sleep(0), twice
